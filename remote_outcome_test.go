package airlock_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	airlock "github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// journalOutcome returns the outcome the journal recorded for a call.
func journalOutcome(t *testing.T, h *airlock.Host, id string) store.Outcome {
	t.Helper()
	st, err := airlock.OpenStore(h.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Journal().Get(context.Background(), id)
	if err != nil {
		t.Fatalf("journal record %s: %v", id, err)
	}
	return rec.Status
}

// TestTransportFailureAfterSendingIsUnknown: once a write has reached the
// server, any failure that is not the server's own JSON-RPC answer (a 5xx,
// a body that is not JSON-RPC) leaves its outcome unknown: the server may
// have applied it. Only a JSON-RPC error or isError is a known failure.
func TestTransportFailureAfterSendingIsUnknown(t *testing.T) {
	answers := []struct {
		name   string
		answer func(w http.ResponseWriter, id json.RawMessage)
		want   airlock.Kind
		say    string // in the error, when set
	}{
		{"500 empty", func(w http.ResponseWriter, _ json.RawMessage) { w.WriteHeader(http.StatusInternalServerError) }, airlock.OutcomeUnknown,
			"the server answered HTTP 500 Internal Server Error instead of a JSON-RPC message"},
		{"502 html", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html>bad gateway</html>")
		}, airlock.OutcomeUnknown, "HTTP 502 Bad Gateway instead of a JSON-RPC message"},
		{"200 not JSON-RPC", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"ok":true}`)
		}, airlock.OutcomeUnknown, ""},
		{"JSON-RPC error", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32603,"message":"disk full"}}`)
		}, airlock.ConnectionError, ""},
		// A 2026-07-28 server rejects a request unread with HTTP 400 and
		// the JSON-RPC error (SEP-2575): its own answer.
		{"400 invalid params", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32602,"message":"bad"}}`)
		}, airlock.ConnectionError, ""},
		// Any other error under a 400 is not how a server answers.
		{"400 internal error", func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"error":{"code":-32603,"message":"disk full"}}`)
		}, airlock.OutcomeUnknown, "the server answered HTTP 400 Bad Request, with JSON-RPC error -32603: disk full"},
		// A server with no oauth: that wants credentials refused the
		// request unread: the configuration is what to fix.
		{"401 without oauth", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`)
			w.WriteHeader(http.StatusUnauthorized)
		}, airlock.ConnectionError, "HTTP 401 Unauthorized: it wants credentials, and its configuration gives none (configure oauth: for it"},
		// A body that never ends is read only up to the message cap.
		{"400 endless", func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusBadRequest)
			chunk := strings.Repeat("x", 64<<10)
			for {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}, airlock.OutcomeUnknown, ""},
	}
	for _, tt := range answers {
		t.Run(tt.name, func(t *testing.T) {
			c := &counted{}
			srv := c.server()
			handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
				&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true})
			var reached atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, tool := toolCallOf(r)
				if tool != "note" {
					handler.ServeHTTP(w, r)
					return
				}
				reached.Add(1) // it may have been applied, then the answer failed
				tt.answer(w, id)
			}))
			t.Cleanup(ts.Close)
			cfg := devConfig(t, remote("web", ts.URL+"/mcp"))
			classify(cfg, "web", "write", "note")
			h := open(t, cfg)

			r := call(t, h, "web__note", `{"text":"once"}`)
			wantStatus(t, r, tt.want)
			if tt.say != "" && !strings.Contains(r.Err.Msg, tt.say) {
				t.Errorf("error = %q, want it to say %q", r.Err.Msg, tt.say)
			}
			if r.Duration > 5*time.Second {
				t.Errorf("the call took %s, want an end well before request_timeout", r.Duration)
			}
			if n := reached.Load(); n != 1 {
				t.Errorf("the server got the write %d times, want once", n)
			}
			if tt.want != airlock.OutcomeUnknown {
				return
			}
			if r.RecoveryID == "" {
				t.Fatal("no recovery id for an unknown outcome")
			}
			if got := journalOutcome(t, h, r.RecoveryID); got != store.OutcomeUnknown {
				t.Errorf("journal outcome = %s, want unknown", got)
			}
		})
	}
}

// TestSessionGoneAfterAWrite: a 404 for the session can come from a server
// (or a proxy) that acted on the request and then lost the session. A
// write that is not idempotent is not sent again on the new session: its
// outcome is unknown. A read, or a write local policy marks idempotent, is
// sent once more.
func TestSessionGoneAfterAWrite(t *testing.T) {
	for _, tt := range []struct {
		effect     string
		idempotent bool
		want       airlock.Kind
		sent       int64
	}{
		{"write", false, airlock.OutcomeUnknown, 1},
		{"write", true, airlock.OK, 2},
		{"read", false, airlock.OK, 2},
	} {
		name := tt.effect
		if tt.idempotent {
			name += " idempotent"
		}
		t.Run(name, func(t *testing.T) {
			c := &counted{}
			hs := newHTTPServer(t, c.server, false)
			// The server behind a wrapper that, the first time the tool is
			// called, takes the request, loses every session and answers
			// 404 for it.
			var sent atomic.Int64
			var forgotten atomic.Bool
			sdk := atomic.Pointer[http.Handler]{}
			sdk.Store(hs.handler.Load())
			var wrapper http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, tool := toolCallOf(r); tool == "note" {
					sent.Add(1)
					if !forgotten.Swap(true) {
						h, _ := hs.build()
						sdk.Store(&h)
						http.Error(w, "session not found", http.StatusNotFound)
						return
					}
				}
				(*sdk.Load()).ServeHTTP(w, r)
			})
			hs.handler.Store(&wrapper)
			cfg := devConfig(t, remote("web", hs.url))
			cfg.Servers[0].ProtocolVersions = []string{"2025-11-25"}
			cfg.Policy.Tools = []config.ToolClass{{Server: "web", Tool: "note", Effect: tt.effect, Idempotent: tt.idempotent, Source: "test"}}
			h := open(t, cfg)

			r := call(t, h, "web__note", `{"text":"x"}`)
			wantStatus(t, r, tt.want)
			if got := sent.Load(); got != tt.sent {
				t.Errorf("the call reached the server %d times, want %d", got, tt.sent)
			}
			if tt.want == airlock.OutcomeUnknown {
				if !strings.Contains(r.Err.Msg, "airlock recovery resolve") {
					t.Errorf("message = %q, want the recovery command", r.Err.Msg)
				}
				if got := journalOutcome(t, h, r.RecoveryID); got != store.OutcomeUnknown {
					t.Errorf("journal outcome = %s, want unknown", got)
				}
			}
		})
	}
}

// TestWriteToAServerThatIsGone: a write to a remote server that no
// longer listens never left the machine: it is a connection_error, its
// intent ends failed, and nobody is asked to resolve it.
func TestWriteToAServerThatIsGone(t *testing.T) {
	c := &counted{}
	hs := newHTTPServer(t, c.server, true)
	// Every request dials: none goes out on a connection kept from before
	// the server went (a write that fails there may have been sent).
	hs.ts.Config.SetKeepAlivesEnabled(false)
	cfg := devConfig(t, remote("web", hs.url))
	classify(cfg, "web", "write", "note")
	h := open(t, cfg)
	wantStatus(t, call(t, h, "web__note", `{"text":"first"}`), airlock.OK)

	// Nothing listens at its address now (its open streams are cut).
	hs.ts.Listener.Close()
	hs.ts.CloseClientConnections()
	r := call(t, h, "web__note", `{"text":"second"}`)
	wantStatus(t, r, airlock.ConnectionError)
	if r.RecoveryID != "" || !strings.Contains(r.Err.Msg, "nothing was sent") {
		t.Errorf("result = %+v (%s); want no recovery record, and the reason", r, r.Err.Msg)
	}
	st, err := airlock.OpenStore(h.StateDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.Journal().Records(context.Background(), store.RecordFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Status == store.OutcomeUnknown {
			t.Errorf("journal record %+v is unknown", rec)
		}
	}
	if n := c.calls.Load(); n != 1 {
		t.Errorf("the server got %d writes, want the first only", n)
	}
}
