package issues

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
	"github.com/airlockhq/airlock/internal/schema"
)

func openTestStore(t *testing.T, path string) *store {
	t.Helper()
	st, err := openStore(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.close() })
	return st
}

// TestCreateRacesAcrossProcesses races creations with one idempotency key
// through two separate database handles on one file, as two replicas of the
// server would: the unique index admits exactly one issue.
func TestCreateRacesAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "issues.db")
	stores := []*store{openTestStore(t, path), openTestStore(t, path)}
	ctx := context.Background()

	const racers = 24
	results := make([]Issue, racers)
	created := make([]bool, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Go(func() {
			<-start
			var err error
			results[i], created[i], err = stores[i%2].create(ctx, "acme", "alice", newIssue{project: "web", title: "Once", key: "race"})
			if err != nil {
				t.Errorf("racer %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := countTrue(created); n != 1 {
		t.Errorf("%d racers created the issue, want 1", n)
	}
	for _, r := range results {
		if r.ID != "ISSUE-1" {
			t.Errorf("a racer got %q, want ISSUE-1", r.ID)
		}
	}
	list, _, err := stores[0].list(ctx, "acme", listQuery{limit: 100})
	if err != nil || len(list) != 1 {
		t.Errorf("issues after the race: %d (%v), want 1", len(list), err)
	}

	// Different keys racing get distinct, consecutive ids.
	for i := range racers {
		wg.Go(func() {
			if _, _, err := stores[i%2].create(ctx, "acme", "alice", newIssue{project: "web", title: "Many", key: fmt.Sprint("k", i)}); err != nil {
				t.Errorf("create %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	list, _, _ = stores[1].list(ctx, "acme", listQuery{limit: 100})
	var ids []string
	for _, is := range list {
		ids = append(ids, is.ID)
	}
	var want []string
	for i := 1; i <= racers+1; i++ {
		want = append(want, formatID(int64(i)))
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}

	var mode string
	if err := stores[0].db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal mode = %q (%v), want wal", mode, err)
	}
}

// TestMemoryIsOneDatabase checks that ":memory:" behaves as one database
// for concurrent callers, not one per pooled connection.
func TestMemoryIsOneDatabase(t *testing.T) {
	st := openTestStore(t, MemoryData)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, _, err := st.create(ctx, "acme", "alice", newIssue{project: "p", title: "t", key: fmt.Sprint(i)}); err != nil {
				t.Error(err)
			}
			if _, _, err := st.list(ctx, "acme", listQuery{limit: 5}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	list, _, err := st.list(ctx, "acme", listQuery{limit: 100})
	if err != nil || len(list) != 20 {
		t.Errorf("issues = %d (%v), want 20", len(list), err)
	}
}

func TestStoreTenantScoping(t *testing.T) {
	st := openTestStore(t, MemoryData)
	ctx := context.Background()
	a, _, _ := st.create(ctx, "a", "alice", newIssue{project: "p", title: "A", key: "k"})
	b, _, _ := st.create(ctx, "b", "bob", newIssue{project: "p", title: "B", key: "k"})
	if a.ID != "ISSUE-1" || b.ID != "ISSUE-1" || a.Title != "A" || b.Title != "B" {
		t.Errorf("the same key in two tenants: %+v, %+v; want two first issues", a, b)
	}
	if _, err := st.get(ctx, "a", 2); err != errNotFound {
		t.Errorf("get of a missing issue = %v, want errNotFound", err)
	}
	if _, err := st.closeIssue(ctx, "c", "carol", 1); err != errNotFound {
		t.Errorf("close in a tenant without issues = %v, want errNotFound", err)
	}
	if got, _ := st.get(ctx, "a", 1); got.Status != StatusOpen {
		t.Errorf("tenant a's issue after tenant c's close: %+v", got)
	}
}

func TestParseIDAndCursor(t *testing.T) {
	ids := map[string]int64{"ISSUE-1": 1, "ISSUE-0042": 42, "ISSUE-0": 0, "ISSUE-": 0, "ISSUE-99999999999999999999": 0, "issue-1": 0, "ISSUE-1x": 0, "ISSUE--1": 0}
	for id, want := range ids {
		got, ok := parseID(id)
		if ok != (want != 0) || got != want {
			t.Errorf("parseID(%q) = %d, %v; want %d", id, got, ok, want)
		}
	}
	for _, n := range []int64{0, 1, 1 << 40} {
		if got, ok := parseCursor(formatCursor(n)); !ok || got != n {
			t.Errorf("cursor round trip of %d = %d, %v", n, got, ok)
		}
	}
	for _, c := range []string{"", "!!", "YWZ0ZXI6LTE", "eA"} {
		if _, ok := parseCursor(c); ok {
			t.Errorf("parseCursor(%q) accepted", c)
		}
	}
}

// TestSchemasPassTheHost checks that every tool schema is one Airlock's own
// host accepts at discovery, so the reference server works through Airlock.
func TestSchemasPassTheHost(t *testing.T) {
	v, err := bearer.NewVerifier("https://auth.example.com", "https://mcp.example.com", &bearer.Options{TenantClaim: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(context.Background(), v, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		for kind, sch := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			data, _ := json.Marshal(sch)
			var doc any
			json.Unmarshal(data, &doc)
			if _, err := schema.Compile(doc, nil); err != nil {
				t.Errorf("%s %s schema refused by the host: %v", tool.Name, kind, err)
			}
		}
		if _, ok := toolScopes[tool.Name]; !ok {
			t.Errorf("tool %s has no scope", tool.Name)
		}
	}
	if len(names) != len(toolScopes) {
		t.Errorf("tools %v, scopes for %d tools", names, len(toolScopes))
	}
	// Calls that reach a handler without a principal are refused there too.
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_issues", Arguments: map[string]any{}})
	if err != nil || !r.IsError {
		t.Errorf("unauthenticated call through another transport: %v %+v, want a tool error", err, r)
	}
}

// FuzzToolCalls checks the scope gate's decoder against encoding/json: for
// any body it accepts, the tools/call names it finds are exactly those a
// plain decoder finds, so no body can show the gate one tool and the SDK
// another.
func FuzzToolCalls(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue"}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"create_issue"}},{"method":"tools/list"}]`))
	f.Add([]byte(`{"method":"tools/call","params":{"name":"get_issue","name":"create_issue"}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"Name":"create_issue"}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"name":"get_\u0069ssue"}}`))
	f.Add([]byte("\xef\xbb\xbf{}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		calls, err := toolCalls(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var v any
		json.Unmarshal(body, &v)
		msgs, ok := v.([]any)
		if !ok {
			msgs = []any{v}
		}
		var want []string
		for _, m := range msgs {
			obj, _ := m.(map[string]any)
			if obj["method"] != "tools/call" {
				continue
			}
			params, _ := obj["params"].(map[string]any)
			name, _ := params["name"].(string)
			want = append(want, name)
		}
		var got []string
		for _, c := range calls {
			got = append(got, c.name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("gate found %q, plain decoder %q in %q", got, want, body)
		}
		for _, c := range calls {
			if strings.ContainsRune(c.name, '\uFFFD') {
				t.Fatalf("accepted a name with a replacement character: %q", body)
			}
		}
	})
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func TestShorten(t *testing.T) {
	z := func(n int) string { return strings.Repeat("z", n) }
	tests := []struct{ in, want string }{
		{"short message", "short message"},
		{`unknown tool "` + z(300) + `"`, `unknown tool "` + z(127) + `…"`},
		{"enum: " + z(300) + " does not equal any of", "enum: " + z(128) + "… does not equal any of"},
		{z(200) + "\n", z(128) + "…\n"},
		// A cut never splits a character.
		{"é" + strings.Repeat("é", 100), strings.Repeat("é", 64) + "…"},
		// Many short words: the whole message is cut.
		{strings.Repeat("ab ", 1000), strings.Repeat("ab ", 341) + "a…"},
	}
	for _, tt := range tests {
		if got := shorten(tt.in); got != tt.want {
			t.Errorf("shorten(%.40q…) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := clip(z(129)); got != z(128)+"…" {
		t.Errorf("clip = %q", got)
	}
	if got := clip("ISSUE-42"); got != "ISSUE-42" {
		t.Errorf("clip of a short value = %q", got)
	}
}
