package main

import (
	"encoding/json"
	"slices"
	"sync"

	"github.com/airlockhq/airlock"
)

// A --json shell may subscribe to resources: {"cmd": "subscribe", "uri",
// "server"} asks the resource's server to say when it changes, and each
// change is a line {"id": SUBSCRIBE_ID, "event": "resource_updated",
// "server", "uri"} until {"cmd": "unsubscribe", "uri", "server"}.

// shellSub is a subscription as the subscribe command named it (server
// "": whichever server the host resolved the URI to).
type shellSub struct{ server, uri string }

// shellSubs are the shell's subscriptions, each with the id of the
// command that made it, which its events carry.
type shellSubs struct {
	mu  sync.Mutex
	ids map[shellSub]json.RawMessage
}

// subscribe answers a subscribe command. Subscribing again to what the
// shell is subscribed to changes nothing.
func (s *shell) subscribe(cmd *shellCommand) any {
	if cmd.URI == "" {
		return map[string]string{"error": `subscribe needs "uri": the resource to watch (see the resources command)`}
	}
	key := shellSub{cmd.Server, cmd.URI}
	s.subs.mu.Lock()
	_, dup := s.subs.ids[key]
	s.subs.mu.Unlock()
	if dup {
		return map[string]bool{"ok": true}
	}
	if err := s.host.h.Subscribe(s.ctx, s.snap, airlock.Read{URI: cmd.URI, Server: cmd.Server}); err != nil {
		return map[string]string{"status": string(err.Kind), "error": err.Msg}
	}
	s.subs.mu.Lock()
	if s.subs.ids == nil {
		s.subs.ids = map[shellSub]json.RawMessage{}
	}
	s.subs.ids[key] = cmd.ID
	s.subs.mu.Unlock()
	return map[string]bool{"ok": true}
}

// unsubscribe answers an unsubscribe command.
func (s *shell) unsubscribe(cmd *shellCommand) any {
	key := shellSub{cmd.Server, cmd.URI}
	s.subs.mu.Lock()
	_, ok := s.subs.ids[key]
	delete(s.subs.ids, key)
	s.subs.mu.Unlock()
	if !ok {
		return map[string]string{"error": `unsubscribe: not subscribed to that "uri" (and "server"): name them as the subscribe command did`}
	}
	if err := s.host.h.Unsubscribe(s.ctx, s.snap, airlock.Read{URI: cmd.URI, Server: cmd.Server}); err != nil {
		return map[string]string{"status": string(err.Kind), "error": err.Msg}
	}
	return map[string]bool{"ok": true}
}

// updated writes the event line of a change to a resource the shell is
// subscribed to, with the id of the subscribe command.
func (s *shell) updated(u airlock.ResourceUpdate) {
	s.subs.mu.Lock()
	id, ok := s.subs.ids[shellSub{u.Server, u.URI}]
	if !ok {
		id, ok = s.subs.ids[shellSub{"", u.URI}]
	}
	s.subs.mu.Unlock()
	if ok {
		s.reply(id, map[string]string{"event": "resource_updated", "server": u.Server, "uri": u.URI})
	}
}

// resourceUpdates hands the host's resource updates to the shell without
// ever blocking the host (Options.ResourceUpdated must not): an update
// waiting to be written absorbs another of the same resource, which says
// nothing more (read it again).
type resourceUpdates struct {
	mu      sync.Mutex
	pending []airlock.ResourceUpdate
	wake    chan struct{}
}

func newResourceUpdates() *resourceUpdates {
	return &resourceUpdates{wake: make(chan struct{}, 1)}
}

// add is the host's Options.ResourceUpdated.
func (q *resourceUpdates) add(u airlock.ResourceUpdate) {
	q.mu.Lock()
	if !slices.Contains(q.pending, u) {
		q.pending = append(q.pending, u)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// forward writes each update with write until stop is closed.
func (q *resourceUpdates) forward(stop <-chan struct{}, write func(airlock.ResourceUpdate)) {
	for {
		select {
		case <-stop:
			return
		case <-q.wake:
		}
		q.mu.Lock()
		pending := q.pending
		q.pending = nil
		q.mu.Unlock()
		for _, u := range pending {
			write(u)
		}
	}
}
