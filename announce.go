package airlock

import (
	"context"
	"slices"
	"strings"
	"time"

	storepkg "github.com/airlockhq/airlock/store"
)

// topicCatalog is the announcements of changes that may change the
// catalog of every replica sharing a store: "login SERVER" and "logout
// SERVER", a person logged in to SERVER or out of it (through any replica,
// or airlock auth login and logout); "changed SERVER", a replica's
// snapshot swap found that SERVER offers something else than before (its
// tools, resources, templates or prompts). Any other payload is ignored:
// it is a later version's.
const topicCatalog = "catalog"

// announceTimeout bounds an announcement: it is a courtesy to the other
// replicas, which also try again at their next safe point.
const announceTimeout = 5 * time.Second

// announce tells the replicas sharing the store that the principal logged
// in to server ("login") or out of it ("logout"), so that those whose
// server waited for a login connect it now, and those that hold a login
// in memory drop it.
func (c *Credentials) announce(what, server string) {
	if c.announcer == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	c.announcer.Announce(ctx, topicCatalog, what+" "+server)
}

// mark marks s to be asked again, not the session's cache of its lists, at
// the next safe point, because another replica announced a change (or may
// have, while the host was not listening): what that finds is not
// announced again (server.told). It reports whether s was not marked
// already.
func (s *server) mark() bool {
	s.fresh.Store(true)
	if s.dirty.Load() {
		return false // its own notification's, or an earlier announcement's
	}
	s.told.Store(true)
	if !s.dirty.CompareAndSwap(false, true) {
		s.told.Store(false) // marked meanwhile, maybe by its own notification
		return false
	}
	return true
}

// announceChanged tells the replicas sharing the store that servers offer
// something else than they did in the host's previous snapshot, one
// "changed SERVER" each, so that each of them asks those servers again at
// its next safe point. What a replica finds because it was told is not
// announced again (server.told), so one change costs one announcement,
// and one discovery of the server on each replica, this one included
// (it hears its own).
//
// It runs in the safe point, so its wait is bounded once for all of them
// (announceTimeout); a store that does not answer loses the rest, which
// the servers' own notifications to each replica may make up for.
func (h *Host) announceChanged(servers []string) {
	a := h.creds.announcer
	if a == nil || len(servers) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	for _, id := range servers {
		if err := a.Announce(ctx, topicCatalog, "changed "+id); err != nil {
			h.log.Warn("cannot tell the other replicas that a server's catalog changed", "server", id, "error", err)
			return
		}
	}
}

// forget drops what the credentials hold in memory of server's logins
// (the next use reads the store again), if the OAuth client is open.
func (c *Credentials) forget(server string) {
	if !c.opened.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), announceTimeout)
	defer cancel()
	if client, err := c.client(); err == nil {
		client.Forget(ctx, server)
	}
}

// watchAnnouncements listens, while the host lives, to what the processes
// sharing its store announce (a store.Announcer, such as PostgreSQL) and
// takes each as a sign that the catalog may have changed
// (Options.CatalogChanged): at its next safe point the host connects the
// servers that waited for a login, as it would after a login of its own,
// and asks again the servers another replica found changed, as it would
// after their own notification.
func (h *Host) watchAnnouncements() {
	a, ok := h.gov.store.(storepkg.Announcer)
	if !ok {
		return
	}
	life := h.life
	h.background.Go(func() {
		a.Watch(life, topicCatalog, h.heard, func() {
			// What was missed may have been a logout, or a change: every
			// login held in memory is read again, and every server asked
			// again.
			for _, s := range h.cfg.Servers {
				h.creds.forget(s.ID)
			}
			for _, s := range h.servers {
				s.mark()
			}
			h.catalogChanged()
		})
	})
}

// heard takes an announcement of the catalog topic. A logout drops the
// login the host holds in memory (its calls then need a login again, on
// this replica too); a login or a logout is a sign that the catalog may
// have changed (Options.CatalogChanged). A change of a server the host
// runs marks it, as its own notification would, to be asked again (not
// the session's cache of its lists) at the next safe point, and the
// catalog may then change (Options.CatalogHeard); a change of a server it
// does not run (another configuration) is none of its business, and
// anything else is a later version's.
func (h *Host) heard(payload string) {
	what, id, _ := strings.Cut(payload, " ")
	switch what {
	case "login":
		h.catalogChanged()
	case "logout":
		h.creds.forget(id)
		h.catalogChanged()
	case "changed":
		i := slices.IndexFunc(h.servers, func(s *server) bool { return s.cfg.ID == id })
		if i >= 0 && h.servers[i].mark() { // one marked already was told
			h.catalogHeard()
		}
	}
}
