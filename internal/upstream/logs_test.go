//lint:file-ignore SA1019 the server under test writes log messages, which protocol version 2026-07-28 deprecates (SEP-2577).

package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
)

// logServer is an in-process server whose tool "talk" writes a debug, an
// info and a warning log message; "quiet" writes none. Given hold, each
// call of either holds: it sends its name on hold.entered, waits for
// hold.talk, writes (or not), sends its name on hold.talked and waits for
// hold.end, so that a test can have calls in flight together while they
// talk.
func logServer(hold *holds) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "logs", Version: "1"}, nil)
	tool := func(name string, levels ...mcp.LoggingLevel) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in struct{ Who string }
				json.Unmarshal(req.Params.Arguments, &in)
				hold.held(req, func() {
					for _, l := range levels {
						req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: name, Data: string(l) + " from " + in.Who})
					}
				})
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
			})
	}
	tool("talk", "debug", "info", "warning")
	tool("quiet")
	return s
}

type holds struct {
	entered, talked chan string
	talk, end       chan struct{}
}

func newHolds() *holds {
	return &holds{entered: make(chan string, 2), talked: make(chan string, 2), talk: make(chan struct{}), end: make(chan struct{})}
}

// held runs talk for the call req, whose arguments name who makes it,
// held by h: it sends who on h.entered, waits for h.talk, talks, sends
// who on h.talked and waits for h.end. A nil h holds nothing.
func (h *holds) held(req *mcp.CallToolRequest, talk func()) {
	var in struct{ Who string }
	json.Unmarshal(req.Params.Arguments, &in)
	if h != nil {
		h.entered <- in.Who
		<-h.talk
	}
	talk()
	if h != nil {
		h.talked <- in.Who
		<-h.end
	}
}

// together lets two held calls talk while both are in flight, then end.
func (h *holds) together() {
	<-h.entered
	<-h.entered
	close(h.talk)
	<-h.talked
	<-h.talked
	close(h.end)
}

func dialLogs(t *testing.T, version string, s *mcp.Server) *Conn {
	t.Helper()
	c := dialMemory(t, s, "logs", version, nil)
	t.Cleanup(func() { c.Close() })
	if got := c.ProtocolVersion(); got != version {
		t.Fatalf("negotiated %s, want %s", got, version)
	}
	return c
}

// dialMemory connects to s, in memory, as the server id speaking version,
// with opts.
func dialMemory(t *testing.T, s *mcp.Server, id, version string, opts *Options) *Conn {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	srv := &config.Server{ID: id, ProtocolVersions: []string{version}, RequestTimeout: 10 * time.Second,
		ConnectTimeout: 10 * time.Second, ProbeTimeout: time.Second}
	c, err := Dial(context.Background(), srv, ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// heard collects what a LogWatch is told.
type heard struct {
	mu   sync.Mutex
	msgs []string
}

func (h *heard) watch(level string) *LogWatch {
	return &LogWatch{Level: level, F: func(level, logger string, data any) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.msgs = append(h.msgs, level+" "+logger+": "+data.(string))
	}}
}

func (h *heard) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

func call(t *testing.T, c *Conn, ctx context.Context, tool, who string) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"who": who})
	if _, err := c.Session().CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}); err != nil {
		t.Errorf("call %s %s: %v", tool, who, err)
	}
}

// TestLogsOfOneCall: a call that asks for log messages gets those the
// server writes during it, at its level and above, in either protocol
// era; a call that does not ask gets none.
func TestLogsOfOneCall(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			c := dialLogs(t, version, logServer(nil))
			var h heard
			call(t, c, WithLogWatch(context.Background(), h.watch("info")), "talk", "a")
			want := []string{"info talk: info from a", "warning talk: warning from a"}
			if diff := cmp.Diff(want, h.got()); diff != "" {
				t.Errorf("log messages (-want +got):\n%s", diff)
			}
			var none heard
			call(t, c, context.Background(), "talk", "b")
			call(t, c, WithLogWatch(context.Background(), none.watch("loud")), "talk", "c") // not a level
			if got := none.got(); len(got) != 0 {
				t.Errorf("a call that asked for no (known) level got %q", got)
			}
		})
	}
}

// TestLogsGoToNobodyWhenAmbiguous: a log message that may belong to more
// than one call in flight goes to none of them. On an older connection any
// call in flight may have caused it (the level is the session's); on a
// 2026-07-28 one only the calls that asked for log messages may.
func TestLogsGoToNobodyWhenAmbiguous(t *testing.T) {
	for _, tt := range []struct {
		version string
		other   string // the other call's tool: talk asks for log messages, quiet does not
		want    int    // how many messages a's call gets
	}{
		{"2025-11-25", "talk", 0},
		{"2025-11-25", "quiet", 0},
		{"2026-07-28", "talk", 0},
		{"2026-07-28", "quiet", 3},
	} {
		hold := newHolds()
		c := dialLogs(t, tt.version, logServer(hold))
		var a, b heard
		var wg sync.WaitGroup
		wg.Go(func() { call(t, c, WithLogWatch(context.Background(), a.watch("debug")), "talk", "a") })
		ctx := context.Background()
		if tt.other == "talk" {
			ctx = WithLogWatch(ctx, b.watch("debug"))
		}
		wg.Go(func() { call(t, c, ctx, tt.other, "b") })
		hold.together()
		wg.Wait()
		if got := a.got(); len(got) != tt.want || len(b.got()) != 0 {
			t.Errorf("%s, other call %s: a got %q, b got %q; want %d for a, none for b", tt.version, tt.other, got, b.got(), tt.want)
		}
	}
}

// TestRemoteLogsFollowTheirStream: a remote server writes a call's log
// messages on that call's response stream, so each goes to its own call,
// however many calls are in flight, in either protocol era.
func TestRemoteLogsFollowTheirStream(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			hold := newHolds()
			s := logServer(hold)
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
				&mcp.StreamableHTTPOptions{Stateless: version >= "2026-07-28"}))
			defer ts.Close()
			srv := &config.Server{ID: "remote", Transport: "http", URL: ts.URL, ProtocolVersions: []string{version},
				ConnectTimeout: 10 * time.Second, ProbeTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second, StreamReadTimeout: time.Minute}
			c, err := DialHTTP(context.Background(), srv, ts.Client(), &Options{Grace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var a, b heard
			var wg sync.WaitGroup
			wg.Go(func() { call(t, c, WithLogWatch(context.Background(), a.watch("info")), "talk", "a") })
			wg.Go(func() { call(t, c, WithLogWatch(context.Background(), b.watch("info")), "talk", "b") })
			hold.together()
			wg.Wait()
			for who, h := range map[string]*heard{"a": &a, "b": &b} {
				want := []string{"info talk: info from " + who, "warning talk: warning from " + who}
				if diff := cmp.Diff(want, h.got()); diff != "" {
					t.Errorf("%s's log messages (-want +got):\n%s", who, diff)
				}
			}
		})
	}
}
