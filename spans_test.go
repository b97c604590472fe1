package airlock_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/internal/testenv"
)

// clearOTel unsets, for the test, every OpenTelemetry variable the machine
// running it may have set.
func clearOTel(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "OTEL_") {
			t.Setenv(k, "")
		}
	}
}

// TestSpansOfCalls: with the standard OpenTelemetry environment pointing
// at a collector, every call is a span, a child of the span in the
// caller's context, named for the call's method and tool, carrying the
// call id, server and class but not the arguments; a name the model made
// up stays out of the span; the host sends what it holds when it closes.
func TestSpansOfCalls(t *testing.T) {
	clearOTel(t)
	rc, endpoint := testenv.ServeTraces(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
	t.Setenv("OTEL_SERVICE_NAME", "agent-host")

	srv := testServer(t, "sdk", "sdk")
	srv.AllowedResources = []string{"test://small"}
	cfg := newConfig(t, srv)
	classify(cfg, "sdk", "read", "echo", "fail")
	h, err := airlock.Open(context.Background(), cfg, &airlock.Options{StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The agent loop's own span, as its tracer would have put it in ctx.
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	const secret = "do-not-export-this-text"
	ok := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "sdk__echo", Arguments: []byte(`{"text":"` + secret + `"}`)})
	wantStatus(t, ok, airlock.OK)
	failed := h.Call(ctx, h.Snapshot(), airlock.Call{Name: "sdk__fail", Arguments: []byte(`{}`)})
	wantStatus(t, failed, airlock.ToolError)
	const madeUp = "sdk__rm_rf_slash"
	wantStatus(t, h.Call(ctx, h.Snapshot(), airlock.Call{Name: madeUp}), airlock.UnknownTool)
	read := h.ReadResource(ctx, h.Snapshot(), airlock.Read{URI: "test://small"})
	wantStatus(t, read, airlock.OK)
	if ok.TraceID != parent.TraceID().String() {
		t.Errorf("Result.TraceID = %s, want the caller's trace %s", ok.TraceID, parent.TraceID())
	}
	h.Close() // sends the spans

	byName := map[string]testenv.Span{}
	for _, s := range rc.Spans() {
		byName[s.Name] = s
		if s.TraceID != parent.TraceID().String() || s.ParentSpanID != parent.SpanID().String() {
			t.Errorf("span %s in trace %s under %s, want trace %s under %s", s.Name, s.TraceID, s.ParentSpanID, parent.TraceID(), parent.SpanID())
		}
		if s.Service != "agent-host" || s.Scope != "github.com/airlockhq/airlock" || s.Kind != int32(trace.SpanKindClient) {
			t.Errorf("span %s: service %q, scope %q, kind %d", s.Name, s.Service, s.Scope, s.Kind)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, secret) || strings.Contains(v, madeUp) {
				t.Errorf("span %s attribute %s = %q: arguments or a made-up name in a span", s.Name, k, v)
			}
		}
	}
	want := map[string]map[string]string{
		"tools/call sdk__echo": {"mcp.method.name": "tools/call", "gen_ai.tool.name": "sdk__echo", "airlock.remote_tool": "echo",
			"airlock.server": "sdk", "airlock.class": "ok", "airlock.call_id": ok.CallID},
		"tools/call sdk__fail": {"airlock.class": "tool_error", "error.type": "tool_error", "airlock.call_id": failed.CallID},
		"tools/call":           {"airlock.class": "unknown_tool", "error.type": "unknown_tool"},
		"resources/read":       {"mcp.method.name": "resources/read", "airlock.server": "sdk", "airlock.class": "ok", "airlock.call_id": read.CallID},
	}
	if len(byName) != len(want) {
		t.Errorf("spans %v, want %d", byName, len(want))
	}
	for name, attrs := range want {
		s, found := byName[name]
		if !found {
			t.Errorf("no span %q", name)
			continue
		}
		for k, v := range attrs {
			if s.Attrs[k] != v {
				t.Errorf("span %s: %s = %q, want %q", name, k, s.Attrs[k], v)
			}
		}
		if wantErr := attrs["airlock.class"] != "ok"; (s.StatusCode == 2) != wantErr {
			t.Errorf("span %s: status %d %q, want an error status: %t", name, s.StatusCode, s.StatusMessage, wantErr)
		}
	}
}
