package telemetry_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/airlockhq/airlock/internal/telemetry"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/sqlite"
)

// OTLP severity numbers (the log data model).
const (
	sevInfo  = 9
	sevWarn  = 13
	sevError = 17
)

const scope = "github.com/airlockhq/airlock"

// openTrail opens a real trail in a temporary directory.
func openTrail(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "airlock.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// start returns the Exporter that env configures, failing the test if
// there is none.
func start(t *testing.T, opts *telemetry.Options) *telemetry.Exporter {
	t.Helper()
	e, err := telemetry.FromEnv(t.Context(), opts)
	if err != nil {
		t.Fatalf("FromEnv: %v", err)
	}
	if e == nil {
		t.Fatal("FromEnv returned no exporter")
	}
	return e
}

func shutdown(t *testing.T, e *telemetry.Exporter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestExport appends events through the wrapper and checks what an
// OTLP/HTTP collector receives: one record per event, in order, with the
// event's name, time, severity and fields.
func TestExport(t *testing.T) {
	rc, url := serveHTTP(t, http.StatusOK, "")
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})
	e := start(t, nil)
	db := openTrail(t)
	trail := e.Audit(db.Audit())

	t0 := time.Date(2030, 1, 2, 3, 4, 5, 600, time.UTC)
	events := []store.Event{
		{Time: t0, Event: store.EventServerReady, Server: "fs", DurationMS: 40},
		{Time: t0.Add(time.Second), Event: store.EventDecision, Server: "fs", Tool: "fs.write", Snapshot: "snap1",
			Fields: map[string]any{"decision": "allow", "rule": "fs.*", "idempotent": false}},
		{Time: t0.Add(2 * time.Second), Event: store.EventResult, Server: "fs", Tool: "fs.write", Snapshot: "snap1",
			Class: "outcome_unknown", DurationMS: 30000,
			Fields: map[string]any{
				"args_shape": map[string]any{"path": "string", "data": "string"},
				"args_hash":  "sha256:00ff",
				"attempt":    2,
				"ratio":      0.25,
				"note":       nil,
				"tags":       []any{"a", "b"},
			}},
		// A read allowed without asking: its result carries its decision.
		{Time: t0.Add(3 * time.Second), Event: store.EventResult, Class: "ok", DurationMS: 3,
			Fields: map[string]any{"decision": "allow", "rule": "default", "effect": "read", "attempt": 1}},
		{Time: t0.Add(4 * time.Second), Event: store.EventResult, Class: "connection_error"},
		{Time: t0.Add(5 * time.Second), Event: store.EventResult, Class: "contract_error"},
		{Time: t0.Add(6 * time.Second), Event: store.EventApprovalDenied, Fields: map[string]any{"approval": "ap1"}},
		{Time: t0.Add(7 * time.Second), Event: store.EventServerFailed, Server: "gh", Fields: map[string]any{"error": "exit status 1"}},
		{Time: t0.Add(8 * time.Second), Event: store.EventCloseFailed, Server: "gh"},
		{Time: t0.Add(9 * time.Second), Event: "custom_event"},
	}
	for _, ev := range events {
		if err := trail.Append(t.Context(), ev); err != nil {
			t.Fatalf("Append(%s): %v", ev.Event, err)
		}
	}
	shutdown(t, e)

	fixed := func(server, tool, snapshot, class string, ms int64, extra map[string]any) map[string]any {
		m := map[string]any{"server": server, "tool": tool, "snapshot": snapshot, "class": class, "duration_ms": ms}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	rec := func(i int, sev int32, text string, attrs map[string]any) got {
		return got{Service: "airlock", Scope: scope, EventName: events[i].Event, Body: events[i].Event,
			Severity: sev, SeverityText: text, Time: events[i].Time, Attrs: attrs}
	}
	want := []got{
		rec(0, sevInfo, "INFO", fixed("fs", "", "", "", 40, nil)),
		rec(1, sevInfo, "INFO", fixed("fs", "fs.write", "snap1", "", 0,
			map[string]any{"decision": "allow", "rule": "fs.*", "idempotent": false})),
		rec(2, sevError, "ERROR", fixed("fs", "fs.write", "snap1", "outcome_unknown", 30000, map[string]any{
			"args_shape": `{"data":"string","path":"string"}`,
			"args_hash":  "sha256:00ff",
			"attempt":    int64(2),
			"ratio":      0.25,
			"note":       nil,
			"tags":       `["a","b"]`,
		})),
		rec(3, sevInfo, "INFO", fixed("", "", "", "ok", 3,
			map[string]any{"decision": "allow", "rule": "default", "effect": "read", "attempt": int64(1)})),
		rec(4, sevError, "ERROR", fixed("", "", "", "connection_error", 0, nil)),
		rec(5, sevError, "ERROR", fixed("", "", "", "contract_error", 0, nil)),
		rec(6, sevWarn, "WARN", fixed("", "", "", "", 0, map[string]any{"approval": "ap1"})),
		rec(7, sevWarn, "WARN", fixed("gh", "", "", "", 0, map[string]any{"error": "exit status 1"})),
		rec(8, sevWarn, "WARN", fixed("gh", "", "", "", 0, nil)),
		rec(9, sevInfo, "INFO", fixed("", "", "", "", 0, nil)),
	}
	if diff := cmp.Diff(want, rc.Records()); diff != "" {
		t.Errorf("received records (-want +got):\n%s", diff)
	}

	// The wrapper reads and writes the trail it wraps.
	stored, err := trail.Events(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(stored), len(events); got != want {
		t.Errorf("the trail has %d events, want %d", got, want)
	}
}

// TestExportDefaultTime: an event without a time gets one, and the trail
// and the collector agree on it.
func TestExportDefaultTime(t *testing.T) {
	rc, url := serveHTTP(t, http.StatusOK, "")
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})
	e := start(t, nil)
	db := openTrail(t)
	trail := e.Audit(db.Audit())
	before := time.Now()
	if err := trail.Append(t.Context(), store.Event{Event: store.EventServerStart}); err != nil {
		t.Fatal(err)
	}
	shutdown(t, e)

	stored, err := trail.Events(t.Context(), time.Time{}, 0)
	if err != nil || len(stored) != 1 {
		t.Fatalf("Events = %v, %v; want one event", stored, err)
	}
	recs := rc.Records()
	if len(recs) != 1 {
		t.Fatalf("received %d records, want 1", len(recs))
	}
	if got := recs[0].Time; got.Before(before.Truncate(time.Microsecond)) {
		t.Errorf("record time %v is before the append at %v", got, before)
	}
	if got, want := recs[0].Time, stored[0].Time; !got.Equal(want) {
		t.Errorf("record time %v, trail time %v: want equal", got, want)
	}
}

// TestExportEnv checks that the standard variables reach the exporter:
// endpoints, service name, headers, compression, protocol.
func TestExportEnv(t *testing.T) {
	tests := []struct {
		name        string
		env         func(url string) map[string]string
		wantPath    string
		wantService string
		wantHeader  [2]string // a header the collector must see
	}{{
		name:     "endpoint",
		env:      func(url string) map[string]string { return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url} },
		wantPath: "/v1/logs", wantService: "airlock",
		wantHeader: [2]string{"Content-Type", "application/x-protobuf"},
	}, {
		name: "endpoint with a base path",
		env: func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url + "/otlp"}
		},
		wantPath: "/otlp/v1/logs", wantService: "airlock",
		wantHeader: [2]string{"Content-Type", "application/x-protobuf"},
	}, {
		name: "logs endpoint wins and is used as is",
		env: func(url string) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": url + "/ingest/logs",
				"OTEL_EXPORTER_OTLP_ENDPOINT":      "http://127.0.0.1:1",
			}
		},
		wantPath: "/ingest/logs", wantService: "airlock",
		wantHeader: [2]string{"Content-Type", "application/x-protobuf"},
	}, {
		name: "service name and explicit protocol",
		env: func(url string) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": url,
				"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				"OTEL_SERVICE_NAME":           "gateway",
			}
		},
		wantPath: "/v1/logs", wantService: "gateway",
		wantHeader: [2]string{"Content-Type", "application/x-protobuf"},
	}, {
		name: "resource attributes name the service",
		env: func(url string) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": url,
				"OTEL_RESOURCE_ATTRIBUTES":    "service.name=edge,deployment.environment=test",
			}
		},
		wantPath: "/v1/logs", wantService: "edge",
		wantHeader: [2]string{"Content-Type", "application/x-protobuf"},
	}, {
		name: "headers",
		env: func(url string) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": url,
				"OTEL_EXPORTER_OTLP_HEADERS":  "authorization=Bearer%20t0k3n-canary,x-tenant=acme",
			}
		},
		wantPath: "/v1/logs", wantService: "airlock",
		wantHeader: [2]string{"Authorization", "Bearer t0k3n-canary"},
	}, {
		name: "gzip",
		env: func(url string) map[string]string {
			return map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT":    url,
				"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
			}
		},
		wantPath: "/v1/logs", wantService: "airlock",
		wantHeader: [2]string{"Content-Encoding", "gzip"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, url := serveHTTP(t, http.StatusOK, "")
			setEnv(t, tt.env(url))
			e := start(t, nil)
			trail := e.Audit(openTrail(t).Audit())
			if err := trail.Append(t.Context(), store.Event{Event: store.EventServerStart, Server: "fs"}); err != nil {
				t.Fatal(err)
			}
			shutdown(t, e)

			recs := rc.Records()
			if len(recs) != 1 {
				t.Fatalf("received %d records, want 1", len(recs))
			}
			if got, want := recs[0].Service, tt.wantService; got != want {
				t.Errorf("service.name = %q, want %q", got, want)
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			if diff := cmp.Diff([]string{tt.wantPath}, rc.paths); diff != "" {
				t.Errorf("request paths (-want +got):\n%s", diff)
			}
			if got, want := rc.headers[0].Get(tt.wantHeader[0]), tt.wantHeader[1]; got != want {
				t.Errorf("header %s = %q, want %q", tt.wantHeader[0], got, want)
			}
		})
	}
}

// TestExportGRPC sends to an OTLP/gRPC collector.
func TestExportGRPC(t *testing.T) {
	rc, url := serveGRPC(t)
	setEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": url,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
	})
	e := start(t, nil)
	trail := e.Audit(openTrail(t).Audit())
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := trail.Append(t.Context(), store.Event{Time: t0, Event: store.EventServerFailed, Server: "gh"}); err != nil {
		t.Fatal(err)
	}
	shutdown(t, e)

	want := []got{{
		Service: "airlock", Scope: scope, EventName: "server_failed", Body: "server_failed",
		Severity: sevWarn, SeverityText: "WARN", Time: t0,
		Attrs: map[string]any{"server": "gh", "tool": "", "snapshot": "", "class": "", "duration_ms": int64(0)},
	}}
	if diff := cmp.Diff(want, rc.Records()); diff != "" {
		t.Errorf("received records (-want +got):\n%s", diff)
	}
}

// TestFromEnvNone: without an endpoint, or with the SDK or the logs
// exporter turned off, there is no Exporter, and the nil Exporter leaves
// the trail alone.
func TestFromEnvNone(t *testing.T) {
	const endpoint = "http://127.0.0.1:4318"
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"nothing set", nil},
		{"headers but no endpoint", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b"}},
		{"blank endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "true"}},
		{"sdk disabled, upper case", map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "TRUE"}},
		{"logs exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_LOGS_EXPORTER": "none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			e, err := telemetry.FromEnv(t.Context(), nil)
			if err != nil || e != nil {
				t.Fatalf("FromEnv = %v, %v; want nil, nil", e, err)
			}
			trail := openTrail(t).Audit()
			if got := e.Audit(trail); got != trail {
				t.Errorf("nil Exporter: Audit returned %T, want the trail itself", got)
			}
			if err := e.Shutdown(t.Context()); err != nil {
				t.Errorf("nil Exporter: Shutdown = %v, want nil", err)
			}
		})
	}

	// Not disabled: the same endpoint does make an exporter.
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "false"})
	e := start(t, nil)
	shutdown(t, e)
}

// TestFromEnvErrors: a configuration that cannot work is an error that
// names the variable to fix and never shows a credential from it.
func TestFromEnvErrors(t *testing.T) {
	const canary = "s3cr3t-canary-value"
	const endpoint = "http://127.0.0.1:4318"
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
	}{
		{"unsupported protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"unsupported logs exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_LOGS_EXPORTER": "console"}, "OTEL_LOGS_EXPORTER"},
		{"password in endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://user:" + canary + "@127.0.0.1:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"password in logs endpoint", map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "https://u:" + canary + "@collector.invalid/v1/logs"}, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"},
		{"endpoint not a URL", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + canary + "%zz:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"endpoint without scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": canary + ".invalid:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"endpoint without host", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http:///" + canary}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"bad logs endpoint beside a good one", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "ftp://" + canary}, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"},
		{"header without =", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": "authorization Bearer " + canary}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header name not a token", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": "x-ok=1,bad " + canary + "=v"}, "OTEL_EXPORTER_OTLP_HEADERS"},
		{"header value badly escaped", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "authorization=" + canary + "%zz"}, "OTEL_EXPORTER_OTLP_LOGS_HEADERS"},
		{"trailing comma in headers", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_HEADERS": "authorization=" + canary + ","}, "OTEL_EXPORTER_OTLP_HEADERS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setEnv(t, tt.env)
			e, err := telemetry.FromEnv(t.Context(), nil)
			if err == nil {
				e.Shutdown(t.Context())
				t.Fatal("FromEnv succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.wantVar) {
				t.Errorf("error %q does not name %s", err, tt.wantVar)
			}
			if strings.Contains(err.Error(), canary) {
				t.Errorf("error %q shows the variable's value", err)
			}
		})
	}
}

// TestCollectorDown: with nothing listening, appends succeed, Shutdown
// returns, and the failure is logged once.
func TestCollectorDown(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": downURL(t)})
	var logs testenv.Buffer
	e := start(t, &telemetry.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	trail := e.Audit(openTrail(t).Audit())
	for range 3 {
		if err := trail.Append(t.Context(), store.Event{Event: store.EventServerStart}); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	shutdown(t, e) // export errors are logged, not returned

	stored, err := trail.Events(t.Context(), time.Time{}, 0)
	if err != nil || len(stored) != 3 {
		t.Errorf("the trail has %d events (%v), want 3", len(stored), err)
	}
	if got, want := strings.Count(logs.String(), "cannot send the audit trail to OpenTelemetry"), 1; got != want {
		t.Errorf("logged %d export failures, want %d; log:\n%s", got, want, logs.String())
	}
}

// TestCollectorHangs: a collector that never answers neither blocks
// appends nor holds Shutdown past its context.
func TestCollectorHangs(t *testing.T) {
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": serveHanging(t)})
	e := start(t, nil)
	trail := e.Audit(openTrail(t).Audit())
	for range 3 {
		if err := trail.Append(t.Context(), store.Event{Event: store.EventServerStart}); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want the context's deadline", err)
	}
}

// TestCollectorRefuses: a collector that refuses the credentials is
// logged with its answer, never with the credentials that were sent.
func TestCollectorRefuses(t *testing.T) {
	const canary = "t0k3n-canary-9f8e7d"
	rc, url := serveHTTP(t, http.StatusUnauthorized, "bad token")
	setEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": url,
		"OTEL_EXPORTER_OTLP_HEADERS":  "authorization=Bearer%20" + canary,
	})
	var logs testenv.Buffer
	e := start(t, &telemetry.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	trail := e.Audit(openTrail(t).Audit())
	if err := trail.Append(t.Context(), store.Event{Event: store.EventServerStart}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	shutdown(t, e)

	rc.mu.Lock()
	sent := len(rc.headers) > 0 && strings.Contains(rc.headers[0].Get("Authorization"), canary)
	rc.mu.Unlock()
	if !sent {
		t.Fatal("the collector did not get the configured Authorization header")
	}
	log := logs.String()
	if !strings.Contains(log, "401") {
		t.Errorf("log does not report the collector's 401:\n%s", log)
	}
	if strings.Contains(log, canary) {
		t.Errorf("log shows the header's value:\n%s", log)
	}
}

// TestAppendFailures: an event the trail cannot store is still sent; an
// event every trail refuses is not; both errors reach the caller. A batch
// with a malformed event is refused whole by the trail, and its other
// events are still sent.
func TestAppendFailures(t *testing.T) {
	rc, url := serveHTTP(t, http.StatusOK, "")
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})
	e := start(t, nil)
	db := openTrail(t)
	trail := e.Audit(db.Audit())

	malformed := store.Event{Event: "decision", Fields: map[string]any{"server": "shadow"}}
	if err := trail.Append(t.Context(), malformed); err == nil {
		t.Error("Append of an event with a reserved field succeeded, want an error")
	}
	if err := trail.Append(t.Context(), store.Event{Event: store.EventApprovalDenied}, malformed); err == nil {
		t.Error("Append of a batch with a malformed event succeeded, want an error")
	}
	if stored, err := db.Audit().Events(t.Context(), time.Time{}, 0); err != nil || len(stored) != 0 {
		t.Errorf("the trail has %v (%v), want nothing", stored, err)
	}
	db.Close()
	if err := trail.Append(t.Context(), store.Event{Event: store.EventCloseFailed, Server: "fs"}); err == nil {
		t.Error("Append to a closed trail succeeded, want an error")
	}
	shutdown(t, e)

	var names []string
	for _, r := range rc.Records() {
		names = append(names, r.EventName)
	}
	if diff := cmp.Diff([]string{store.EventApprovalDenied, store.EventCloseFailed}, names, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("received events (-want +got):\n%s", diff)
	}
}

// TestAppendBatch: several events appended at once reach the trail in one
// batch, and every one of them is sent, with the time the trail has.
func TestAppendBatch(t *testing.T) {
	rc, url := serveHTTP(t, http.StatusOK, "")
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url})
	e := start(t, nil)
	db := openTrail(t)
	trail := e.Audit(db.Audit())

	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	batch := []store.Event{
		{Time: t0, Event: store.EventCallSent, Server: "fs", Tool: "fs.write"},
		{Event: store.EventResult, Server: "fs", Tool: "fs.write", Class: "ok"}, // no time: stamped
		{Time: t0.Add(time.Second), Event: store.EventArtifactStored, Fields: map[string]any{"bytes": 12}},
	}
	if err := trail.Append(t.Context(), batch...); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if !batch[1].Time.IsZero() {
		t.Error("Append changed the caller's events")
	}
	shutdown(t, e)

	stored, err := db.Audit().Events(t.Context(), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Event string
		Time  time.Time
	}
	var fromTrail, fromCollector []summary
	for _, ev := range stored {
		fromTrail = append(fromTrail, summary{ev.Event, ev.Time.UTC()})
	}
	for _, r := range rc.Records() {
		fromCollector = append(fromCollector, summary{r.EventName, r.Time})
	}
	if len(fromTrail) != len(batch) {
		t.Fatalf("the trail has %d events, want %d", len(fromTrail), len(batch))
	}
	// The trail reads back in time order, the collector in append order.
	byEvent := cmpopts.SortSlices(func(a, b summary) bool { return a.Event < b.Event })
	if diff := cmp.Diff(fromTrail, fromCollector, byEvent); diff != "" {
		t.Errorf("collector vs trail (-trail +collector):\n%s", diff)
	}
}
