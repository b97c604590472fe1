package airlock_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// progressLog collects what Options.CallProgress is told.
type progressLog struct {
	mu   sync.Mutex
	seen []airlock.CallProgress
}

func (p *progressLog) add(cp airlock.CallProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, cp)
}

func (p *progressLog) got() []airlock.CallProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]airlock.CallProgress(nil), p.seen...)
}

// openWithProgress opens a host on cfg, whose server sdk's progress tool
// is a read, that tells the log returned of every call's progress.
func openWithProgress(t *testing.T, cfg *config.Config) (*airlock.Host, *progressLog) {
	t.Helper()
	classify(cfg, "sdk", "read", "progress")
	log := &progressLog{}
	return openWith(t, cfg, &airlock.Options{CallProgress: log.add}), log
}

// TestCallProgress: with Options.CallProgress, a call's progress
// notifications reach the caller, over stdio and HTTP, named for the call;
// the call's bounds do not change (request_timeout still ends a call that
// only reports progress, without max_call_duration).
func TestCallProgress(t *testing.T) {
	hs := newHTTPServer(t, newTestServer, false)
	for _, srv := range []config.Server{testServer(t, "sdk", "sdk"), remote("sdk", hs.url)} {
		t.Run(srv.Transport, func(t *testing.T) {
			h, log := openWithProgress(t, devConfig(t, srv))
			r := call(t, h, "sdk__progress", `{"steps":3}`)
			wantStatus(t, r, airlock.OK)
			// The connection looks at notifications as it reads them, in
			// the order the server wrote them, before the answer: every
			// one arrives while the call is in flight, in order.
			got := log.got()
			var want []airlock.CallProgress
			for i := range 3 {
				want = append(want, airlock.CallProgress{ToolCallID: "call_1", Tool: "sdk__progress", Server: "sdk", Progress: float64(i + 1)})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			// Nothing comes after the call returned.
			time.Sleep(200 * time.Millisecond)
			if n := len(log.got()); n != len(got) {
				t.Errorf("%d progress notifications after the call returned", n-len(got))
			}
		})
	}

	// Without max_call_duration, reporting progress extends nothing.
	srv := testServer(t, "sdk", "sdk")
	srv.RequestTimeout = 300 * time.Millisecond
	h, log := openWithProgress(t, newConfig(t, srv))
	r := call(t, h, "sdk__progress", `{"steps":10}`)
	wantStatus(t, r, airlock.ConnectionError)
	if !strings.Contains(r.Err.Msg, "request_timeout") || len(log.got()) == 0 {
		t.Errorf("error = %q after %d progress notifications, want request_timeout after some", r.Err.Msg, len(log.got()))
	}
}

// TestWireTrace: Options.Trace gets every JSON-RPC message, sent and
// received, over stdio and HTTP, one JSON object a line with time, server
// and direction, secrets redacted; it is complete when Close returns.
// TestCallsOwnProgressAndLogs: a call's own Progress and Log are told of
// that call's progress notifications and of the log messages its server
// writes during it (at its LogLevel and above, configured secrets
// scrubbed), over stdio and HTTP, and no other call's.
func TestCallsOwnProgressAndLogs(t *testing.T) {
	const secret = "canary-log-secret-51d0"
	t.Setenv("AIRLOCK_TEST_CANARY", secret)
	hs := newHTTPServer(t, newTestServer, false)
	for _, srv := range []config.Server{testServer(t, "sdk", "sdk"), remote("sdk", hs.url)} {
		t.Run(srv.Transport, func(t *testing.T) {
			if !srv.Remote() {
				srv.SecretEnv = map[string]string{"API_KEY": "AIRLOCK_TEST_CANARY"}
			}
			cfg := devConfig(t, srv)
			classify(cfg, "sdk", "read", "progress", "logs")
			h := open(t, cfg)
			var mine progressLog
			var logs []string
			var mu sync.Mutex
			ctx := context.Background()
			r := h.Call(ctx, h.Snapshot(), airlock.Call{ID: "mine", Name: "sdk__progress", Arguments: json.RawMessage(`{"steps":2}`), Progress: mine.add})
			wantStatus(t, r, airlock.OK)
			want := []airlock.CallProgress{{ToolCallID: "mine", Tool: "sdk__progress", Server: "sdk", Progress: 1}, {ToolCallID: "mine", Tool: "sdk__progress", Server: "sdk", Progress: 2}}
			if diff := cmp.Diff(want, mine.got()); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			r = h.Call(ctx, h.Snapshot(), airlock.Call{ID: "chatty", Name: "sdk__logs", LogLevel: "info", Log: func(l airlock.CallLog) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, fmt.Sprintf("%s %s %s %s %s %s", l.ToolCallID, l.Tool, l.Server, l.Level, l.Logger, l.Data))
			}})
			wantStatus(t, r, airlock.OK)
			key := ""
			if !srv.Remote() {
				key = "[REDACTED:secret]"
			}
			wantLogs := []string{
				`chatty sdk__logs sdk info logs {"key":"` + key + `","level":"info"}`,
				`chatty sdk__logs sdk warning logs {"key":"` + key + `","level":"warning"}`,
			}
			mu.Lock()
			if diff := cmp.Diff(wantLogs, logs); diff != "" {
				t.Errorf("log messages (-want +got):\n%s", diff)
			}
			mu.Unlock()
			// Calls that ask for nothing tell the first call's Progress
			// nothing.
			wantStatus(t, call(t, h, "sdk__progress", `{"steps":2}`), airlock.OK)
			wantStatus(t, call(t, h, "sdk__logs", `{}`), airlock.OK)
			if n := len(mine.got()); n != 2 {
				t.Errorf("the first call's Progress was told %d times, want 2", n)
			}
		})
	}
}

func TestWireTrace(t *testing.T) {
	const secret = "hunter2-very-secret-value"
	const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	hs := newHTTPServer(t, newTestServer, false)
	for _, srv := range []config.Server{testServer(t, "sdk", "sdk"), remote("sdk", hs.url)} {
		t.Run(srv.Transport, func(t *testing.T) {
			cfg := devConfig(t, srv)
			var trace bytes.Buffer
			h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StopGrace: 500 * time.Millisecond,
				Trace: &trace, Secrets: []string{secret}})
			if err != nil {
				t.Fatal(err)
			}
			started := time.Now().Add(-time.Second)
			wantStatus(t, call(t, h, "sdk__echo", `{"text":"`+secret+` `+token+`"}`), airlock.OK)
			h.Close()

			if text := trace.String(); strings.Contains(text, secret) || strings.Contains(text, token) {
				t.Errorf("the trace holds a secret:\n%s", text)
			}
			var methods []string
			sc := bufio.NewScanner(&trace)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var line struct {
					Time      time.Time      `json:"time"`
					Server    string         `json:"server"`
					Direction string         `json:"direction"`
					Message   map[string]any `json:"message"`
				}
				dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&line); err != nil {
					t.Fatalf("trace line %q: %v", sc.Text(), err)
				}
				if line.Server != "sdk" || line.Time.Before(started) || line.Time.After(time.Now()) || line.Message["jsonrpc"] != "2.0" {
					t.Errorf("trace line %s: want server sdk, a time of this test, a JSON-RPC message", sc.Text())
				}
				what, _ := line.Message["method"].(string)
				if what == "" {
					what = "result"
					if _, ok := line.Message["error"]; ok {
						what = "error"
					}
				}
				methods = append(methods, line.Direction+" "+what)
				if what == "tools/call" {
					args := line.Message["params"].(map[string]any)["arguments"].(map[string]any)
					if args["text"] != "[REDACTED:secret] [REDACTED:github_token]" {
						t.Errorf("traced arguments = %v, want both secrets redacted", args)
					}
				}
			}
			// The handshake (either era's), discovery, the call and its
			// answer, in the order they passed.
			var want []string
			for _, m := range methods {
				switch m {
				case "sent initialize", "sent server/discover": // a probe may fall back
					if len(want) == 0 {
						want = append(want, "sent handshake")
					}
				case "sent tools/list", "sent tools/call":
					want = append(want, m)
				}
			}
			if diff := cmp.Diff([]string{"sent handshake", "sent tools/list", "sent tools/call"}, want); diff != "" {
				t.Errorf("requests in the trace (-want +got):\n%s\nall: %v", diff, methods)
			}
			if !slices.Contains(methods, "received result") {
				t.Errorf("the trace has no answer: %v", methods)
			}
		})
	}
}
