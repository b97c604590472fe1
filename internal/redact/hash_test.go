package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"key order", map[string]any{"b": 1.0, "a": []any{true, nil}, "c": map[string]any{"z": "x", "y": "w"}},
			`{"a":[true,null],"b":1,"c":{"y":"w","z":"x"}}`},
		{"keys by utf-16 code units", map[string]any{"\U0001F600": 1.0, "\uFB01": 2.0, "a": 3.0},
			`{"a":3,"😀":1,"ﬁ":2}`},
		{"numbers", []any{json.Number("1.0"), json.Number("1e2"), json.Number("-0"), json.Number("0.1"), 1e21, 1e-7, 123456789.0, json.Number("-0.0")},
			`[1,100,0,0.1,1e+21,1e-7,123456789,0]`},
		{"big integers stay exact", []any{json.Number("12345678901234567890"), json.Number("12345678901234567891")},
			`[12345678901234567890,12345678901234567891]`},
		{"strings", "a\"b\\c\n\u0001<>&\u2028é", `"a\"b\\c\n\u0001<>&` + "\u2028" + `é"`},
		{"go values", struct {
			B int    `json:"b"`
			A string `json:"a"`
		}{2, "x"}, `{"a":"x","b":2}`},
	} {
		got, err := Canonical(tc.in)
		if err != nil {
			t.Errorf("Canonical(%s): %v", tc.name, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Canonical(%s):\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	for _, bad := range []any{make(chan int), []any{func() {}}} {
		if _, err := Canonical(bad); err == nil {
			t.Errorf("Canonical(%T): got nil error", bad)
		}
	}
}

func TestHash(t *testing.T) {
	a := decode(t, `{"path": "a.txt", "n": 1.0, "tags": ["x", "y"]}`)
	same := decode(t, `{"tags":["x","y"],"n":1,"path":"a.txt"}`)
	if Hash(a) != Hash(same) {
		t.Errorf("equal JSON hashes differently: %s vs %s", Hash(a), Hash(same))
	}
	for _, other := range []string{
		`{"path": "b.txt", "n": 1, "tags": ["x", "y"]}`,
		`{"path": "a.txt", "n": 1, "tags": ["y", "x"]}`,
		`{"path": "a.txt", "n": "1", "tags": ["x", "y"]}`,
		`{"path": "a.txt", "n": 1, "tags": ["x", "y"], "extra": null}`,
	} {
		if Hash(a) == Hash(decode(t, other)) {
			t.Errorf("different JSON hashes alike: %s", other)
		}
	}
	if got := Hash(a); !strings.HasPrefix(got, "sha256:") || len(got) != len("sha256:")+64 {
		t.Errorf("Hash = %q, want sha256: and 64 hex digits", got)
	}
	if Hash(make(chan int)) == Hash(a) {
		t.Error("an unencodable value hashes like a real one")
	}
}

// FuzzCanonical: the canonical form of any JSON is itself JSON with the
// same canonical form.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,-0,1e400]}`, `"\u00e9\ud83d\ude00"`, `[{"":null}]`, `123456789012345678901234567890`, `0.1e-5`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		c, err := Canonical(v)
		if err != nil {
			return // numbers beyond float64
		}
		dec = json.NewDecoder(strings.NewReader(string(c)))
		dec.UseNumber()
		var back any
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("canonical form %q of %q is not JSON: %v", c, s, err)
		}
		again, err := Canonical(back)
		if err != nil || string(again) != string(c) {
			t.Fatalf("canonical form is not stable: %q then %q (%v)", c, again, err)
		}
	})
}
