package telemetry

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"

	"github.com/airlockhq/airlock/store"
)

// warnEvents are the events that say something went wrong without losing
// a call's outcome.
var warnEvents = []string{store.EventServerFailed, store.EventCloseFailed, store.EventApprovalDenied}

// errorClasses are the result classes for which the caller did not get
// what the server was asked for, or cannot know whether it happened.
var errorClasses = []string{"contract_error", "connection_error", "outcome_unknown"}

// severity ranks ev: Error for the result classes above, Warn for the
// events above, Info for the rest.
func severity(ev store.Event) (otellog.Severity, string) {
	switch {
	case slices.Contains(errorClasses, ev.Class):
		return otellog.SeverityError, "ERROR"
	case slices.Contains(warnEvents, ev.Event):
		return otellog.SeverityWarn, "WARN"
	}
	return otellog.SeverityInfo, "INFO"
}

// record turns ev into a log record observed at now. The attributes are
// the fields of an `airlock audit --json` line other than time and event:
// the fixed ones always, then the extra fields in name order.
func record(ev store.Event, now time.Time) otellog.Record {
	var r otellog.Record
	r.SetTimestamp(ev.Time)
	r.SetObservedTimestamp(now)
	r.SetEventName(ev.Event)
	r.SetBody(attribute.StringValue(ev.Event))
	sev, text := severity(ev)
	r.SetSeverity(sev)
	r.SetSeverityText(text)

	attrs := make([]attribute.KeyValue, 0, 5+len(ev.Fields))
	attrs = append(attrs,
		attribute.String("server", ev.Server),
		attribute.String("tool", ev.Tool),
		attribute.String("snapshot", ev.Snapshot),
		attribute.String("class", ev.Class),
		attribute.Int64("duration_ms", ev.DurationMS),
	)
	for _, k := range slices.Sorted(maps.Keys(ev.Fields)) {
		attrs = append(attrs, attribute.KeyValue{Key: attribute.Key(k), Value: value(ev.Fields[k])})
	}
	r.AddAttributes(attrs...)
	return r
}

// value converts an extra field. Scalars keep their type (integers as
// int64, unless too large); nil is the empty value; everything else —
// objects, arrays, structs — is its JSON text, because backends index flat
// attributes better than nested ones.
func value(v any) attribute.Value {
	switch v := v.(type) {
	case nil:
		return attribute.Value{}
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return attribute.Int64Value(i)
		}
		if f, err := v.Float64(); err == nil {
			return attribute.Float64Value(f)
		}
		return attribute.StringValue(v.String())
	case time.Time:
		return attribute.StringValue(v.Format(time.RFC3339Nano))
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return attribute.StringValue(rv.String())
	case reflect.Bool:
		return attribute.BoolValue(rv.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return attribute.Int64Value(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := rv.Uint(); u <= math.MaxInt64 {
			return attribute.Int64Value(int64(u))
		}
		return attribute.StringValue(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		return attribute.Float64Value(rv.Float())
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Trails refuse such values; the record still says something.
		return attribute.StringValue(fmt.Sprintf("%v", v))
	}
	return attribute.StringValue(string(b))
}
