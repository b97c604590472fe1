package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// stdDecode is encoding/json's reading of data, with numbers kept as text.
func stdDecode(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

// FuzzDecode checks that Decode never panics, that Check agrees with it
// exactly, that whatever Decode accepts encoding/json reads the same way,
// and that Decode refuses JSON that encoding/json accepts only for one of the
// strict rules (never for "syntax").
func FuzzDecode(f *testing.F) {
	for _, tt := range decodeErrorTests {
		f.Add([]byte(tt.in), tt.opts != nil && tt.opts.CaseFold)
	}
	for _, s := range []string{
		`{"a": 1, "b": [true, false, null], "c": {"d": "e"}}`,
		`"\ud83d\ude00 \u00e9 \\ \/ \b"`,
		`[-0, 0.5, 1e3, 1E-3, -1.25e+2, 123456789012345678901234567890]`,
		`{"path": 1, "Path": 2}`,
		`{"ǅ": 1, "ǆ": 2}`,
		`  [ { } , [ ] ]  `,
		"{\"\u212a\": 1, \"k\": 2}",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, caseFold bool) {
		opts := &DecodeOptions{CaseFold: caseFold, MaxDepth: 32}
		got, err := Decode(data, opts)
		if cerr := Check(data, opts); fmt.Sprint(cerr) != fmt.Sprint(err) {
			t.Fatalf("Check = %v, Decode = %v", cerr, err)
		}
		want, stdErr := stdDecode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error %T %v, want *DecodeError", err, err)
			}
			if de.Reason == "" {
				t.Fatalf("empty reason")
			}
			if de.code == codeSyntax && stdErr == nil {
				t.Fatalf("Decode calls valid JSON invalid: %v", err)
			}
			return
		}
		if !utf8.Valid(data) {
			t.Fatalf("Decode accepted invalid UTF-8")
		}
		if stdErr != nil {
			t.Fatalf("Decode accepted what encoding/json refuses (%v)", stdErr)
		}
		// reflect.DeepEqual first: cmp.Diff takes exponential time on
		// deeply nested arrays.
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Decode and encoding/json disagree (-json +Decode):\n%s", cmp.Diff(want, got))
		}
		// What Decode returns re-encodes to text it accepts again unchanged.
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		got2, err := Decode(again, opts)
		if err != nil {
			t.Fatalf("Decode(re-encoded %q): %v", again, err)
		}
		if !reflect.DeepEqual(got, got2) {
			t.Fatalf("round trip changed the value (-first +second):\n%s", cmp.Diff(got, got2))
		}
	})
}
