package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// maxStreams bounds the live event streams open at once: each looks at
// the store every Options.Poll.
const maxStreams = 64

// heartbeat is how often an idle stream sends a comment, so that proxies
// keep it open and a browser notices a console gone.
const heartbeat = 15 * time.Second

// A watcher computes a fingerprint of what a page shows: the page's
// stream tells the browser to refresh when it changes. It writes to h
// what the page depends on.
type watcher func(ctx context.Context, r *http.Request, h hash.Hash) error

// watchers are the pages that refresh, by name.
func (c *Console) watchers() map[string]watcher {
	return map[string]watcher{
		"approvals": c.watchApprovals,
		"inputs":    c.watchInputs,
		"recovery":  c.watchRecovery,
		"servers":   c.watchServers,
		"tasks":     c.watchTasks,
		"runs":      c.watchRuns,
	}
}

// events streams server-sent events to one page (?page=NAME): an event
// named after the page each time what it shows changes, which htmx
// answers by fetching the page again (hx-trigger="sse:NAME"). The audit
// page gets an event for each look that found new events it may show.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("page")
	watch, ok := c.watchers()[name]
	if !ok && name != "audit" {
		// A page without a stream (verify, an error): the connection is
		// answered, and nothing is sent on it.
		watch = nil
	}
	if c.streams.Add(1) > maxStreams {
		c.streams.Add(-1)
		http.Error(w, "too many console pages are open: close some and reload", http.StatusServiceUnavailable)
		return
	}
	defer c.streams.Add(-1)
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()

	// v is what the page showed when it was rendered (fingerprint): a
	// change after that, even before the stream opened, is news.
	ctx := r.Context()
	last := r.URL.Query().Get("v")
	cursor, _ := strconv.ParseInt(last, 10, 64)
	tick := time.NewTicker(c.opts.Poll)
	defer tick.Stop()
	idle := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		changed := false
		switch {
		case name == "audit":
			changed, cursor = c.newEvents(ctx, r, cursor)
		case watch != nil:
			sum, err := c.fingerprint(ctx, r, watch)
			if err != nil {
				continue // the page shows the error when it is fetched
			}
			changed = sum != last
			last = sum
		}
		switch {
		case changed:
			fmt.Fprintf(w, "event: %s\ndata: changed\n\n", name)
		case time.Since(idle) >= heartbeat:
			fmt.Fprint(w, ": still here\n\n")
		default:
			continue
		}
		idle = time.Now()
		flusher.Flush()
	}
}

// fingerprint is what watch computes, as text for a URL.
func (c *Console) fingerprint(ctx context.Context, r *http.Request, watch watcher) (string, error) {
	h := sha256.New()
	if err := watch(ctx, r, h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// stream is the URL of the event stream of page name as it is rendered
// now for r.
func (c *Console) stream(r *http.Request, name string) string {
	ctx, cancel := pageContext(r)
	defer cancel()
	v := ""
	if name == "audit" {
		if page, err := c.opts.Store.Audit().Tail(ctx, time.Now().Add(-time.Minute), 0, 1); err == nil {
			v = strconv.FormatInt(page.Next, 10)
		}
	} else if watch, ok := c.watchers()[name]; ok {
		v, _ = c.fingerprint(ctx, r, watch)
	}
	return Prefix + "events?" + url.Values{"page": {name}, "v": {v}}.Encode()
}

// streamKey is the context key of a page's stream URL.
type streamKey struct{}

// live serves page name with handler, its stream's URL computed before
// the handler reads what the page shows (so that nothing that changes in
// between is missed).
func (c *Console) live(name string, handler http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		handler(w, r.WithContext(context.WithValue(r.Context(), streamKey{}, c.stream(r, name))))
	}
}

// newEvents reports whether the trail has events after cursor that the
// viewer may see, and the cursor past them.
func (c *Console) newEvents(ctx context.Context, r *http.Request, cursor int64) (bool, int64) {
	page, err := c.opts.Store.Audit().Tail(ctx, time.Time{}, cursor, 1000)
	if err != nil {
		return false, cursor
	}
	as := c.actor(r)
	for _, ev := range page.Events {
		if visible(as, ev) {
			return true, page.Next
		}
	}
	return false, page.Next
}

func (c *Console) watchApprovals(_ context.Context, r *http.Request, h hash.Hash) error {
	list, err := c.listApprovals(r, store.ApprovalFilter{Status: store.ApprovalPending})
	for _, a := range list {
		fmt.Fprintln(h, a.ID, a.Status)
	}
	return err
}

func (c *Console) watchRecovery(ctx context.Context, r *http.Request, h hash.Hash) error {
	as := c.actor(r)
	f := store.RecordFilter{}
	if !as.AllPrincipals {
		f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
	}
	recs, err := c.opts.Store.Journal().Records(ctx, f)
	for _, rec := range recs {
		fmt.Fprintln(h, rec.ID, rec.Status, rec.Resolved, rec.LateAnswer)
	}
	return err
}

func (c *Console) watchServers(_ context.Context, r *http.Request, h hash.Hash) error {
	host := c.runningHost(r)
	if host == nil {
		return nil
	}
	for _, s := range host.Servers() {
		fmt.Fprintln(h, s.ID, s.Status, s.ProtocolVersion, s.Tools, s.Restarts, s.Err != nil)
	}
	return nil
}

func (c *Console) watchTasks(ctx context.Context, _ *http.Request, h hash.Hash) error {
	list, err := airlock.ListTasksWith(ctx, c.opts.Store, c.opts.StateDir)
	for _, t := range list {
		fmt.Fprintln(h, t.ID, t.Status, t.InUse)
	}
	return err
}

func (c *Console) watchRuns(ctx context.Context, r *http.Request, h hash.Hash) error {
	runs, ok := c.opts.Store.(store.Runs)
	if !ok {
		return nil
	}
	f := store.RunFilter{Limit: 200}
	if as := c.actor(r); !as.AllPrincipals {
		f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
	}
	list, err := runs.RunRecords(ctx, f)
	for _, run := range list {
		fmt.Fprintln(h, run.ID, run.Status, run.UpdatedAt.UnixNano())
	}
	return err
}
