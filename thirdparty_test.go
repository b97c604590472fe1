package airlock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/testenv"
)

// These tests run real third-party servers, no mocks: the TypeScript
// reference server from the npm registry (it speaks 2025-11-25 only) and the
// go-sdk's conformance server (it speaks 2026-07-28).

func TestServerEverything(t *testing.T) {
	node, script := testenv.EverythingServer(t)
	srv := config.Server{
		ID:               "everything",
		Transport:        "stdio",
		Scope:            "host",
		Command:          node,
		Args:             []string{script, "stdio"},
		Cwd:              t.TempDir(),
		AllowedTools:     []string{"echo", "get-sum", "get-tiny-image"},
		ProtocolVersions: bothVersions,
		RequestTimeout:   30 * time.Second,
		ConnectTimeout:   60 * time.Second,
		ProbeTimeout:     5 * time.Second,
	}
	h := open(t, newConfig(t, srv))
	st := h.Servers()[0]
	if st.Status != airlock.StatusReady {
		t.Fatalf("server = %+v: %v", st, st.Err)
	}
	if st.ProtocolVersion != "2025-11-25" {
		t.Errorf("protocol = %s, want 2025-11-25 (the TypeScript SDK has no 2026-07-28 yet)", st.ProtocolVersion)
	}
	if got := len(h.Snapshot().Tools()); got != 3 {
		t.Errorf("%d tools, want the 3 allowed", got)
	}

	r := call(t, h, "everything__echo", `{"message":"hello from airlock"}`)
	wantStatus(t, r, airlock.OK)
	if !strings.Contains(r.Content, "hello from airlock") {
		t.Errorf("echo content = %q", r.Content)
	}
	r = call(t, h, "everything__get-sum", `{"a":2,"b":40}`)
	wantStatus(t, r, airlock.OK)
	if !strings.Contains(r.Content, "42") {
		t.Errorf("get-sum content = %q, want 42", r.Content)
	}
	wantStatus(t, call(t, h, "everything__get-sum", `{"a":"two","b":40}`), airlock.InvalidArguments)

	r = call(t, h, "everything__get-tiny-image", `{}`)
	wantStatus(t, r, airlock.OK)
	if len(r.Artifacts) == 0 || r.Artifacts[0].MediaType != "image/png" || strings.Contains(r.Content, "iVBOR") {
		t.Errorf("image result = %q with %+v, want a PNG artifact and no base64", r.Content, r.Artifacts)
	}
}

func TestGoSDKEverythingServer(t *testing.T) {
	bin := testenv.GoSDKEverythingServer(t)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			srv := config.Server{
				ID:               "gosdk",
				Transport:        "stdio",
				Scope:            "host",
				Command:          bin,
				Cwd:              t.TempDir(),
				AllowedTools:     []string{"test_simple_text", "test_image_content", "test_error_handling", "json_schema_2020_12_tool"},
				ProtocolVersions: []string{version},
				RequestTimeout:   30 * time.Second,
				ConnectTimeout:   30 * time.Second,
				ProbeTimeout:     5 * time.Second,
			}
			h := open(t, newConfig(t, srv))
			st := h.Servers()[0]
			if st.Status != airlock.StatusReady || st.ProtocolVersion != version {
				t.Fatalf("server = %+v (%v), want ready on %s", st, st.Err, version)
			}
			r := call(t, h, "gosdk__test_simple_text", `{}`)
			wantStatus(t, r, airlock.OK)
			if !strings.Contains(r.Content, "This is a simple text response for testing.") {
				t.Errorf("content = %q", r.Content)
			}
			r = call(t, h, "gosdk__test_image_content", `{}`)
			wantStatus(t, r, airlock.OK)
			if len(r.Artifacts) != 1 || r.Artifacts[0].MediaType != "image/png" {
				t.Errorf("artifacts = %+v, want one PNG", r.Artifacts)
			}
			wantStatus(t, call(t, h, "gosdk__test_error_handling", `{}`), airlock.ToolError)
		})
	}
}
