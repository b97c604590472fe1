package airlock_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store/postgres"
)

// catalogWatch is what the test hears on the catalog topic of a
// PostgreSQL store, as a replica would.
type catalogWatch struct {
	db *postgres.DB

	mu    sync.Mutex
	heard []string
	more  chan struct{} // a token each time something is heard
}

// watchCatalog listens to the catalog announcements of the database url
// until the test ends; it returns once it hears them.
func watchCatalog(t *testing.T, url, key string) *catalogWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	db, err := postgres.Open(ctx, url, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &catalogWatch{db: db, more: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Watch(ctx, "catalog", func(p string) {
			w.mu.Lock()
			w.heard = append(w.heard, p)
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
		}, func() {})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		db.Close()
	})
	// Listening starts on a connection of its own: say something until
	// it is heard. Replicas ignore what they do not know.
	w.sync(t, "test listening")
	return w
}

// sync announces payload and waits until it is heard: what was announced
// before it has been heard too.
func (w *catalogWatch) sync(t *testing.T, payload string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := w.db.Announce(context.Background(), "catalog", payload); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.more:
		case <-time.After(100 * time.Millisecond):
		}
		if slices.Contains(w.all(), payload) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("announcement %q not heard back", payload)
		}
	}
}

func (w *catalogWatch) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.heard)
}

// changes returns the "changed" announcements heard so far.
func (w *catalogWatch) changes() []string {
	var out []string
	for _, p := range w.all() {
		if strings.HasPrefix(p, "changed ") {
			out = append(out, p)
		}
	}
	return out
}

// replica opens a host of cfg with a state directory of its own; its
// CatalogChanged calls are counted and signalled on the returned channel.
func replica(t *testing.T, cfg *config.Config) (*airlock.Host, <-chan struct{}, *atomic.Int64) {
	t.Helper()
	changed := make(chan struct{}, 1)
	var n atomic.Int64
	h := openWith(t, cfg, &airlock.Options{StateDir: t.TempDir(),
		CatalogChanged: func() {
			n.Add(1)
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	return h, changed, &n
}

// turnUntil takes turns of h, one each time its catalog may have changed
// (and now and then), until the snapshot has tool or the generous
// deadline passes.
func turnUntil(t *testing.T, h *airlock.Host, changed <-chan struct{}, tool string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, ok := lookup(h.BeginTurn(context.Background()), tool); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not in the catalog after 30s; tools: %v", tool, h.Snapshot().Tools())
		}
		select {
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func addTool(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: text(name)}, nil
		})
}

// tellOnly makes s tell only the session told holds (none when nil) that
// its tool list changed.
func tellOnly(s *mcp.Server, told *atomic.Pointer[mcp.ServerSession]) {
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, _ := req.GetSession().(*mcp.ServerSession); method == "notifications/tools/list_changed" && ss != told.Load() {
				return nil, nil
			}
			return next(ctx, method, req)
		}
	})
}

// TestCatalogChangeReachesReplicas: two hosts on one PostgreSQL database
// connect one remote server, whose tool list changes; the server tells
// only the session of replica A. B's catalog shows the change all the
// same, and it took exactly one announcement: B, which asked the server
// because A said so, and A, which heard its own announcement and found
// what it had, announce nothing, however many turns they take.
func TestCatalogChangeReachesReplicas(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	srv := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	addTool(srv, "first")
	var told atomic.Pointer[mcp.ServerSession] // the one session told of changes
	tellOnly(srv, &told)
	hs := newHTTPServer(t, func() *mcp.Server { return srv }, false)
	config := func() *config.Config {
		c := remote("c", hs.url)
		c.ProtocolVersions = []string{"2025-11-25"} // whose sessions hear list_changed
		cfg := devConfig(t, c)
		cfg.Store.URL, cfg.Store.AuditKey = url, key
		return cfg
	}
	w := watchCatalog(t, url, key)

	a, aChanged, _ := replica(t, config())
	for ss := range srv.Sessions() {
		told.Store(ss)
	}
	b, bChanged, _ := replica(t, config())
	testenv.WaitListening(t, url, "catalog", 3) // the test, A and B
	for _, h := range []*airlock.Host{a, b} {
		if _, ok := lookup(h.Snapshot(), "c__first"); !ok {
			t.Fatalf("c__first not in the first catalog: %v", h.Servers())
		}
	}

	addTool(srv, "added")
	turnUntil(t, a, aChanged, "c__added")
	turnUntil(t, b, bChanged, "c__added")

	// More turns, of both, find nothing new and announce nothing.
	for range 3 {
		a.BeginTurn(context.Background())
		b.BeginTurn(context.Background())
	}
	w.sync(t, "test done")
	if got, want := w.changes(), []string{"changed c"}; !slices.Equal(got, want) {
		t.Errorf("announced %q, want %q", got, want)
	}
}

// TestAnnouncedChangeAsksTheServer: a replica told that server c changed
// asks c itself, although its session keeps c's tool list for ten minutes
// (ttlMs, 2026-07-28) and c sent no notification: that list is what is
// stale; c tells no one that its list changed. An announcement of a server it does not run, or one it cannot
// read, changes nothing.
func TestAnnouncedChangeAsksTheServer(t *testing.T) {
	url, key := testenv.PostgresDatabase(t), filepath.Join(t.TempDir(), "audit.key")
	srv := mcp.NewServer(&mcp.Implementation{Name: "cached", Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) {
			c.TTLMs = int(10 * time.Minute / time.Millisecond)
		},
	})
	addTool(srv, "first")
	tellOnly(srv, new(atomic.Pointer[mcp.ServerSession])) // no one
	hs := newHTTPServer(t, func() *mcp.Server { return srv }, true)
	c := remote("c", hs.url)
	c.ProtocolVersions = []string{"2026-07-28"}
	cfg := devConfig(t, c)
	cfg.Store.URL, cfg.Store.AuditKey = url, key
	w := watchCatalog(t, url, key)
	h, changed, calls := replica(t, cfg)
	if st := h.Servers()[0]; st.Status != airlock.StatusReady || st.ProtocolVersion != "2026-07-28" {
		t.Fatalf("server = %+v (%v), want ready on 2026-07-28", st, st.Err)
	}
	testenv.WaitListening(t, url, "catalog", 2) // the test and the host

	addTool(srv, "added")
	for _, p := range []string{"changed elsewhere", "renamed c", "changed c"} {
		if err := w.db.Announce(context.Background(), "catalog", p); err != nil {
			t.Fatal(err)
		}
	}
	turnUntil(t, h, changed, "c__added")
	if n := calls.Load(); n != 1 {
		t.Errorf("CatalogChanged was called %d times, want once: for c, not for a server the host does not run or a payload it cannot read", n)
	}
	w.sync(t, "test done")
	if got := w.changes(); !slices.Equal(got, []string{"changed elsewhere", "changed c"}) {
		t.Errorf("announced %q, want only the test's: a change the host was told of is not announced again", got)
	}
}
