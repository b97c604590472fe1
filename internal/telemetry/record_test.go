package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"golang.org/x/time/rate"

	"github.com/airlockhq/airlock/store"
)

func TestSeverity(t *testing.T) {
	tests := []struct {
		ev       store.Event
		want     otellog.Severity
		wantText string
	}{
		{store.Event{Event: store.EventServerStart}, otellog.SeverityInfo, "INFO"},
		{store.Event{Event: store.EventResult, Class: "ok"}, otellog.SeverityInfo, "INFO"},
		{store.Event{Event: store.EventResult, Class: "tool_error"}, otellog.SeverityInfo, "INFO"},
		{store.Event{Event: store.EventResult, Class: "denied"}, otellog.SeverityInfo, "INFO"},
		{store.Event{Event: store.EventApprovalGranted}, otellog.SeverityInfo, "INFO"},
		{store.Event{Event: store.EventServerFailed}, otellog.SeverityWarn, "WARN"},
		{store.Event{Event: store.EventCloseFailed}, otellog.SeverityWarn, "WARN"},
		{store.Event{Event: store.EventApprovalDenied}, otellog.SeverityWarn, "WARN"},
		{store.Event{Event: store.EventResult, Class: "contract_error"}, otellog.SeverityError, "ERROR"},
		{store.Event{Event: store.EventResult, Class: "connection_error"}, otellog.SeverityError, "ERROR"},
		{store.Event{Event: store.EventResult, Class: "outcome_unknown"}, otellog.SeverityError, "ERROR"},
		// The class outranks the event.
		{store.Event{Event: store.EventServerFailed, Class: "connection_error"}, otellog.SeverityError, "ERROR"},
	}
	for _, tt := range tests {
		got, gotText := severity(tt.ev)
		if got != tt.want || gotText != tt.wantText {
			t.Errorf("severity(%s, class %q) = %v %q, want %v %q", tt.ev.Event, tt.ev.Class, got, gotText, tt.want, tt.wantText)
		}
	}
}

type kind string

func TestValue(t *testing.T) {
	when := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	tests := []struct {
		name string
		in   any
		want attribute.Value
	}{
		{"nil", nil, attribute.Value{}},
		{"string", "x", attribute.StringValue("x")},
		{"named string", kind("ok"), attribute.StringValue("ok")},
		{"bool", true, attribute.BoolValue(true)},
		{"int", 7, attribute.Int64Value(7)},
		{"int8", int8(-3), attribute.Int64Value(-3)},
		{"uint32", uint32(9), attribute.Int64Value(9)},
		{"uint64 too large", uint64(math.MaxUint64), attribute.StringValue("18446744073709551615")},
		{"float64", 1.5, attribute.Float64Value(1.5)},
		{"float32", float32(0.5), attribute.Float64Value(0.5)},
		{"json integer", json.Number("42"), attribute.Int64Value(42)},
		{"json float", json.Number("4.25"), attribute.Float64Value(4.25)},
		{"time", when, attribute.StringValue("2030-01-02T03:04:05.000000006Z")},
		{"object", map[string]any{"b": 1.0, "a": []any{"x", nil}}, attribute.StringValue(`{"a":["x",null],"b":1}`)},
		{"array", []string{"a", "b"}, attribute.StringValue(`["a","b"]`)},
		{"struct", struct {
			N int `json:"n"`
		}{3}, attribute.StringValue(`{"n":3}`)},
		{"not JSON", make(chan int), attribute.StringValue("")}, // checked by prefix below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := value(tt.in)
			if tt.name == "not JSON" {
				if got.Type() != attribute.STRING || !strings.HasPrefix(got.AsString(), "0x") {
					t.Errorf("value(chan) = %v, want its %%v text", got)
				}
				return
			}
			if got.Type() != tt.want.Type() || got.String() != tt.want.String() {
				t.Errorf("value(%#v) = %v %q, want %v %q", tt.in, got.Type(), got.String(), tt.want.Type(), tt.want.String())
			}
		})
	}
}

// TestRecord checks the record's fixed parts; the attributes of each kind
// of field are checked end to end through a collector.
func TestRecord(t *testing.T) {
	when := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	now := when.Add(time.Second)
	ev := store.Event{Time: when, Event: "result", Server: "s", Tool: "t", Snapshot: "n", Class: "ok", DurationMS: 5,
		Fields: map[string]any{"z": 1, "a": "x"}}
	r := record(ev, now)
	if got, want := r.EventName(), "result"; got != want {
		t.Errorf("EventName = %q, want %q", got, want)
	}
	if got, want := r.Body().String(), "result"; got != want {
		t.Errorf("Body = %q, want %q", got, want)
	}
	if !r.Timestamp().Equal(when) || !r.ObservedTimestamp().Equal(now) {
		t.Errorf("times = %v, %v; want %v, %v", r.Timestamp(), r.ObservedTimestamp(), when, now)
	}
	var keys []string
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		keys = append(keys, string(kv.Key))
		return true
	})
	want := []string{"server", "tool", "snapshot", "class", "duration_ms", "a", "z"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("attribute keys (-want +got):\n%s", diff)
	}
}

// failing is an exporter whose exports all fail.
type failing struct{ exports int }

func (f *failing) Export(context.Context, []sdklog.Record) error {
	f.exports++
	return errors.New("connection refused")
}
func (f *failing) Shutdown(context.Context) error   { return nil }
func (f *failing) ForceFlush(context.Context) error { return nil }

// TestReporterRateLimit: failures are swallowed (nothing reaches the
// global handler) and logged at most once an interval.
func TestReporterRateLimit(t *testing.T) {
	var logs strings.Builder
	rep := &reporter{log: slog.New(slog.NewTextHandler(&logs, nil)), limit: rate.Sometimes{First: 1, Interval: time.Hour}}
	f := &failing{}
	exp := reportingExporter{Exporter: f, rep: rep}
	for range 5 {
		if err := exp.Export(t.Context(), make([]sdklog.Record, 2)); err != nil {
			t.Fatalf("Export = %v, want nil", err)
		}
	}
	if got, want := f.exports, 5; got != want {
		t.Fatalf("inner exports = %d, want %d", got, want)
	}
	if got, want := strings.Count(logs.String(), "\n"), 1; got != want {
		t.Errorf("logged %d lines, want %d:\n%s", got, want, logs.String())
	}
	if got, want := rep.suppressed.Load(), int64(4); got != want {
		t.Errorf("failures not logged = %d, want %d", got, want)
	}
	if !strings.Contains(logs.String(), "connection refused") || !strings.Contains(logs.String(), "records=2") {
		t.Errorf("log line lacks the error or the record count:\n%s", logs.String())
	}
}

// envErrorTemplate matches every error checkHeaders and checkEndpoint may
// return, once pair numbers are replaced by N: the messages are fixed
// text, so no part of a value can appear in them.
var envErrorTemplates = []string{
	"V: pair N has no '=': write key=value pairs separated by commas",
	"V: pair N has an invalid header name",
	"V: the value of pair N is not validly percent-encoded",
	"V is not a URL: set it to http(s)://host:port",
	"V must not contain a user or password: put credentials in OTEL_EXPORTER_OTLP_HEADERS",
	"V must start with http:// or https://",
	"V has no host: set it to http(s)://host:port",
}

var digits = regexp.MustCompile(`[0-9]+`)

// FuzzCheckEnv: whatever a variable holds, the checks' errors are one of
// the fixed messages, so they never echo a credential.
func FuzzCheckEnv(f *testing.F) {
	for _, s := range []string{
		"", "a=b", "authorization=Bearer%20xyz,x-tenant=acme", "a=b,", "noequals", "bad key=v", "k=%zz",
		"http://127.0.0.1:4318", "https://u:p@h/x", "ftp://h", "http:///p", "http://h%zz", "h:4318", "=v", " k = v ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, err := range []error{checkHeaders("V", v), checkEndpoint("V", v)} {
			if err == nil {
				continue
			}
			msg := digits.ReplaceAllString(err.Error(), "N")
			found := false
			for _, tmpl := range envErrorTemplates {
				if msg == tmpl {
					found = true
				}
			}
			if !found {
				t.Errorf("error %q is not one of the fixed messages", err)
			}
		}
		if err := checkHeaders("V", v); err == nil && v != "" {
			// What the check accepts, the exporter libraries parse the same
			// way: every pair has a key and a decodable value.
			for pair := range strings.SplitSeq(v, ",") {
				k, _, ok := strings.Cut(pair, "=")
				if !ok || strings.TrimSpace(k) == "" {
					t.Errorf("checkHeaders accepted %q with pair %q", v, pair)
				}
			}
		}
	})
}
