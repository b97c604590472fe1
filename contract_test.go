package airlock_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
)

// rawServer is a scripted server (see serveRaw).
func rawServer(t *testing.T, id string, script map[string]string) config.Server {
	t.Helper()
	srv := testServer(t, id, "raw")
	b, err := json.Marshal(script)
	if err != nil {
		t.Fatal(err)
	}
	srv.Env[envRaw] = string(b)
	return srv
}

const (
	legacyInit = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}`
	helloTools = `{"tools":[{"name":"hello","inputSchema":{"type":"object"}}]}`
	helloCall  = `{"content":[{"type":"text","text":"hi"}]}`
)

func TestLegacyServerThatIgnoresDiscover(t *testing.T) {
	// Without a bound on the probe, the handshake would wait out the
	// connect timeout and fail.
	srv := rawServer(t, "legacy", map[string]string{
		"server/discover": "ignore",
		"initialize":      legacyInit,
		"tools/list":      helloTools,
		"tools/call":      helloCall,
	})
	srv.ProbeTimeout = 200 * time.Millisecond
	srv.ConnectTimeout = 8 * time.Second
	h := open(t, newConfig(t, srv))
	st := h.Servers()[0]
	if st.Status != airlock.StatusReady || st.ProtocolVersion != "2025-11-25" {
		t.Fatalf("server = %+v (%v), want ready on 2025-11-25", st, st.Err)
	}
	r := call(t, h, "legacy__hello", `{}`)
	wantStatus(t, r, airlock.OK)
	if r.Content != "hi" {
		t.Errorf("content = %q, want hi", r.Content)
	}
	seen := marks(t, srv)
	if i, j := slices.Index(seen, "initialize"), slices.Index(seen, "notifications/initialized"); seen[0] != "server/discover" || i < 0 || j < i {
		t.Errorf("server saw %v, want a discover probe, then the initialize handshake", seen)
	}
}

func TestSlowModernServerMissesTheProbe(t *testing.T) {
	// A 2026-07-28 server that answers server/discover only after the
	// probe's bound, and (having no initialize) refuses the fallback: the
	// host starts it again and gives the probe the whole connect timeout.
	srv := rawServer(t, "slow", map[string]string{
		"server/discover": `delay:600:{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}}}`,
		"tools/list":      `{"resultType":"complete","tools":[{"name":"hello","inputSchema":{"type":"object"}}]}`,
		"tools/call":      `{"resultType":"complete","content":[{"type":"text","text":"hi"}]}`,
	})
	srv.ProbeTimeout = 200 * time.Millisecond
	h := open(t, newConfig(t, srv))
	st := h.Servers()[0]
	if st.Status != airlock.StatusReady || st.ProtocolVersion != "2026-07-28" {
		t.Fatalf("server = %+v (%v), want ready on 2026-07-28", st, st.Err)
	}
	wantStatus(t, call(t, h, "slow__hello", `{}`), airlock.OK)
	if n := strings.Count(strings.Join(marks(t, srv), ","), "server/discover"); n != 2 {
		t.Errorf("server saw %d discover probes (%v), want 2: one bounded, one after the restart", n, marks(t, srv))
	}
}

func TestHandshakeContract(t *testing.T) {
	tests := []struct {
		name     string
		script   map[string]string
		versions []string
		want     string
	}{
		{
			name:     "version not allowed",
			script:   map[string]string{"initialize": legacyInit, "tools/list": helloTools},
			versions: []string{"2026-07-28"},
			want:     "protocol_versions",
		},
		{
			name:     "no tools capability",
			script:   map[string]string{"initialize": `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"1"}}`},
			versions: bothVersions,
			want:     "none of the tools, resources and prompts capabilities",
		},
		{
			name:     "duplicate keys in a response",
			script:   map[string]string{"initialize": legacyInit, "tools/list": `{"tools":[{"name":"a","inputSchema":{"type":"object"}}],"tools":[]}`},
			versions: bothVersions,
			want:     "malformed",
		},
		{
			name:     "schema bomb",
			script:   map[string]string{"initialize": legacyInit, "tools/list": `{"tools":[{"name":"bomb","inputSchema":` + bomb(30) + `}]}`},
			versions: bothVersions,
			want:     "MaxExpansion",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := rawServer(t, "raw", tt.script)
			srv.ProtocolVersions = tt.versions
			h := open(t, newConfig(t, srv))
			st := h.Servers()[0]
			if st.Status != airlock.StatusFailed || st.Err.Kind != airlock.ContractError {
				t.Fatalf("server = %+v, want failed with a contract error", st)
			}
			if !strings.Contains(st.Err.Msg, tt.want) {
				t.Errorf("error = %q, want it to mention %q", st.Err.Msg, tt.want)
			}
			if n := len(h.Snapshot().Tools()); n != 0 {
				t.Errorf("failed server exposes %d tools", n)
			}
		})
	}
}

// bomb is a small schema whose full expansion has 2^n nodes.
func bomb(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{"x":{"$ref":"#/$defs/d0"}},"$defs":{`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		next := `{"type":"string"}`
		if i+1 < n {
			next = `{"anyOf":[{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"},{"$ref":"#/$defs/d` + strconv.Itoa(i+1) + `"}]}`
		}
		b.WriteString(`"d` + strconv.Itoa(i) + `":` + next)
	}
	b.WriteString(`}}`)
	return b.String()
}

func TestMalformedCallResponse(t *testing.T) {
	srv := rawServer(t, "raw", map[string]string{
		"initialize": legacyInit,
		"tools/list": helloTools,
		"tools/call": `{"content":[{"type":"text","text":"shown"}],"isError":false,"isError":true}`,
	})
	r := callRead(t, srv, "hello", `{}`)
	wantStatus(t, r, airlock.ContractError)
	if r.Content != "" {
		t.Errorf("content = %q reaches the model", r.Content)
	}
}

func TestServerRequestsForClientFeaturesAreRefused(t *testing.T) {
	// The host offers servers no roots, and sampling only where
	// sampling: says so: asked in the middle of a call for its roots or a
	// sample, it answers "method not found", and the call, whose server
	// broke the contract, ends contract_error.
	srv := testServer(t, "sdk", "sdk")
	srv.ProtocolVersions = []string{"2025-11-25"} // later servers ask through the call's result
	h := open(t, newConfig(t, srv))
	for _, what := range []string{"roots", "sampling"} {
		r := call(t, h, "sdk__ask", `{"what":"`+what+`"}`)
		wantStatus(t, r, airlock.ContractError)
		if r.Content != "" || !strings.Contains(r.Err.Msg, "which Airlock did not declare to it") {
			t.Errorf("asked for %s: content %q, error %q", what, r.Content, r.Err.Msg)
		}
		if len(r.Inputs) != 1 || r.Inputs[0].Kind != what || r.Inputs[0].Action != "" || !strings.Contains(r.Inputs[0].Reason, "refused") {
			t.Errorf("asked for %s: inputs %+v, want the refusal", what, r.Inputs)
		}
		// The entry leaves sampling out: the reason names its default.
		if what == "sampling" && len(r.Inputs) == 1 && !strings.Contains(r.Inputs[0].Reason, "servers[].sampling is deny)") {
			t.Errorf("asked for sampling: reason %q, want it to say servers[].sampling is deny", r.Inputs[0].Reason)
		}
	}
}

func TestServerRequestsTheHostDoesNotServe(t *testing.T) {
	srv := rawServer(t, "raw", map[string]string{"initialize": legacyInit, "tools/list": helloTools})
	asks := []string{"x/unknown", "roots/list", "sampling/createMessage", "elicitation/create", "ping"}
	b, _ := json.Marshal(asks)
	srv.Env[envAsk] = string(b)
	open(t, newConfig(t, srv))
	answers := map[string]string{}
	waitFor(t, 10*time.Second, "the host to answer every request", func() bool {
		for _, m := range marks(t, srv) {
			reply, ok := strings.CutPrefix(m, "reply ")
			if !ok {
				continue
			}
			var a struct {
				ID     string
				Result json.RawMessage
				Error  *struct{ Code int }
			}
			if err := json.Unmarshal([]byte(reply), &a); err != nil {
				t.Fatalf("reply %s: %v", reply, err)
			}
			switch {
			case a.Error != nil:
				answers[a.ID] = "error " + strconv.Itoa(a.Error.Code)
			default:
				answers[a.ID] = "result " + string(a.Result)
			}
		}
		return len(answers) == len(asks)
	})
	for i, method := range asks {
		want := "error -32601"
		if method == "ping" {
			want = "result {}"
		}
		if got := answers["ask-"+strconv.Itoa(i)]; got != want {
			t.Errorf("%s: the host answered %s, want %s", method, got, want)
		}
	}
}
