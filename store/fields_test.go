package store

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

type verdict string

type shouting string

func (s shouting) MarshalJSON() ([]byte, error) { return json.Marshal("LOUD " + string(s)) }

type textual string

func (s textual) MarshalText() ([]byte, error) { return []byte("text " + s), nil }

// pointerOnly marshals itself only when addressable, which a value in a
// map is not.
type pointerOnly string

func (s *pointerOnly) MarshalJSON() ([]byte, error) { return []byte(`"pointer"`), nil }

// TestEncodeFieldsIsJSONMarshal: encodeFields writes what json.Marshal
// writes, byte for byte, for every kind of value an event may hold; the
// chain covers these bytes.
func TestEncodeFieldsIsJSONMarshal(t *testing.T) {
	for _, fields := range []map[string]any{
		{"a": "plain", "b": "", "c": true, "d": false, "e": nil},
		{"html": "<a href=\"x\">&</a>", "ctl": "line\nbreak\ttab\x00\x1f\x7f", "back": `C:\path`},
		{"utf8": "héllo 世界 🙂", "seps": "a\u2028b\u2029c", "bad": "bad\xff\xfeutf8", "cut": "\xe4\xb8"},
		{"ints": 42, "neg": -7, "i64": int64(math.MaxInt64), "min": int64(math.MinInt64), "i32": int32(5), "u": uint64(math.MaxUint64), "gen": uint64(7), "uint": uint(3)},
		{"f": 1.5, "zero": 0.0, "negzero": math.Copysign(0, -1), "big": 1e21, "bigger": 1.5e300, "small": 1e-7, "edge": 1e-6,
			"third": 1.0 / 3, "whole": 1e20, "neg": -2.5e-5},
		{"num": json.Number("12.50"), "raw": json.RawMessage(`{"z":1,"a":[true]}`), "time": time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)},
		{"named": verdict("allow"), "marshaler": shouting("hi"), "bytes": []byte("xyz"), "text": textual("t"), "pointer": pointerOnly("p"),
			"escaped": verdict("<b>\u2028"), "empty": json.Number(""), "number": json.Number("-1.5e3")},
		{"shape": map[string]any{"text": "string", "n": "number", "nested": map[string]any{"z": []any{"a", 1.0, nil}}},
			"list": []any{map[string]any{"b": 1, "a": 2}, []any{}, []any(nil)}, "nilmap": map[string]any(nil), "empty": map[string]any{}},
		{"<key>": 1, "ké": 2, "a\nb": 3, "": 4, "Z": 5, "a": 6},
		{"typed": map[string]int{"b": 2, "a": 1}, "strs": []string{"x", "<y>"}},
	} {
		want, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeFields(fields)
		if err != nil {
			t.Fatalf("encodeFields(%v): %v", fields, err)
		}
		if string(got) != string(want) {
			t.Errorf("encodeFields(%v)\n got %s\nwant %s", fields, got, want)
		}
	}
	for _, bad := range []any{json.Number("1.2.3"), math.NaN(), math.Inf(1), make(chan int), map[string]any{"x": math.Inf(-1)}, []any{func() {}}} {
		_, want := json.Marshal(map[string]any{"v": bad})
		_, got := encodeFields(map[string]any{"v": bad})
		if got == nil || got.Error() != want.Error() {
			t.Errorf("encodeFields of %T: error %v, want %v", bad, got, want)
		}
	}
}

func FuzzEncodeFields(f *testing.F) {
	for _, s := range []string{"plain", "<&>", "\u2028", "\xff", "é", `"\`} {
		f.Add(s, 1.5, int64(3))
	}
	f.Fuzz(func(t *testing.T, s string, x float64, n int64) {
		fields := map[string]any{s: s, "f": x, "n": n, "list": []any{s, x}}
		want, werr := json.Marshal(fields)
		got, err := encodeFields(fields)
		if (err == nil) != (werr == nil) || string(got) != string(want) {
			t.Errorf("encodeFields = %s, %v; json.Marshal = %s, %v", got, err, want, werr)
		}
	})
}

// BenchmarkEncodeFields encodes the fields of the event most calls write,
// a read's result, as the audit writer hands it to Append.
func BenchmarkEncodeFields(b *testing.B) {
	const hash = "sha256:214fd2d0c78e5994589fb09fb67acdc14671e54b0274f286ae50442988b87a6d"
	fields := map[string]any{
		"args_hash": hash, "args_shape": map[string]any{"text": "string"}, "attempt": 1, "call": "call_96497923d475e70bb1ed9eb2f6",
		"connection": uint64(1), "content_hash": hash, "content_shape": []any{map[string]any{"text": "string", "type": "string"}},
		"decision": verdict("allow"), "effect": verdict("read"), "generation": uint64(1), "reason": "allowed by policy.rules[0] (bench)",
		"result_hash": hash, "result_shape": map[string]any{"text": "string"}, "rule": "policy.rules[0] (bench)", "tenant": "default",
		"trace_id": "28e1366261ea7caf9d18ba9668d4c0e7", "user": "root",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeFields(fields); err != nil {
			b.Fatal(err)
		}
	}
}
