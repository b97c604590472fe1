package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// sessionRenamer serves an SDK server over Streamable HTTP, but hands
// clients the session id id in place of the SDK's own (and maps it back on
// the requests that carry it), as a server with its own idea of a session
// id would.
type sessionRenamer struct {
	next http.Handler
	id   string

	mu   sync.Mutex
	real map[string]string // id → the SDK's
}

func (s *sessionRenamer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		s.mu.Lock()
		if real, ok := s.real[id]; ok {
			r.Header.Set("Mcp-Session-Id", real)
		}
		s.mu.Unlock()
	}
	s.next.ServeHTTP(&renaming{ResponseWriter: w, s: s}, r)
}

type renaming struct {
	http.ResponseWriter
	s     *sessionRenamer
	wrote bool
}

func (w *renaming) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	if real := w.Header().Get("Mcp-Session-Id"); real != "" {
		w.s.mu.Lock()
		w.s.real[w.s.id] = real
		w.s.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", w.s.id)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *renaming) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(p)
}

func (w *renaming) Flush() {
	w.WriteHeader(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func TestSessionIDs(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)

	visible := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(0x21 + i%(0x7e-0x21+1))
		}
		return string(b)
	}
	tests := []struct {
		name, id string
		want     string // in the error; "" for an id that is accepted
	}{
		{"UUID", "3f2b8c1e-5d4a-4b6f-9e7d-0a1b2c3d4e5f", ""},
		{"every visible character, at the bound", visible(maxSessionID), ""},
		{"a space", "abc def", "byte 3 is 0x20"},
		{"a tab", "abc\tdef", "byte 3 is 0x09"},
		{"non-ASCII", "sessión", "byte 5 is 0xc3"},
		{"64 KiB", strings.Repeat("a", 64<<10), "65536 bytes long; at most 1024"},
		{"one byte over the bound", visible(maxSessionID + 1), "1025 bytes long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(&sessionRenamer{next: sdk, id: tt.id, real: map[string]string{}})
			defer ts.Close()
			srv := &config.Server{ID: "remote", Transport: "http", URL: ts.URL, ProtocolVersions: []string{"2025-11-25"},
				ConnectTimeout: 10 * time.Second, ProbeTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second}
			c, err := DialHTTP(context.Background(), srv, ts.Client(), &Options{Grace: time.Second})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("DialHTTP: %v", err)
				}
				defer c.Close()
				if got := c.SessionID(); got != tt.id {
					t.Errorf("session id = %.40q, want %.40q", got, tt.id)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("DialHTTP accepted the session id")
			}
			var se *StartError
			if !errors.As(err, &se) || !se.Contract {
				t.Errorf("error = %v, want a contract error", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "session id (Mcp-Session-Id)") || !strings.Contains(msg, tt.want) {
				t.Errorf("error = %q, want it to say %q about the session id", msg, tt.want)
			}
			if strings.Contains(msg, tt.id) {
				t.Errorf("error = %.200q quotes the id", msg)
			}
		})
	}
}

func TestTwoSessionIDs(t *testing.T) {
	if err := checkSessionID([]string{"a", "b"}); err == nil || !strings.Contains(err.Error(), "2 session ids") {
		t.Errorf("checkSessionID(two ids) = %v", err)
	}
}

// A remote server that is gone when the host closes its session has nothing
// left to release: Close reports no failure, and the log says the server
// was not told.
func TestCloseWithServerGone(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	// The server goes away as the session is ended: the connection is cut.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		sdk.ServeHTTP(w, r)
	}))
	defer ts.Close()
	srv := &config.Server{ID: "remote", Transport: "http", URL: ts.URL, ProtocolVersions: []string{"2025-11-25"},
		ConnectTimeout: 10 * time.Second, ProbeTimeout: 2 * time.Second, RequestTimeout: 10 * time.Second, TerminateOnClose: true}
	log := &testenv.Buffer{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	c, err := DialHTTP(context.Background(), srv, ts.Client(), &Options{Grace: time.Second, Logger: logger})
	if err != nil {
		t.Fatalf("DialHTTP: %v", err)
	}
	if c.SessionID() == "" {
		t.Fatal("no session id: the test needs a session to end")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close = %v, want nil: nothing is left running", err)
	}
	if !strings.Contains(log.String(), "the server was not told that its session ended") || !strings.Contains(log.String(), "server=remote") {
		t.Errorf("log = %q, want the failed session end, with the server", log.String())
	}
}
