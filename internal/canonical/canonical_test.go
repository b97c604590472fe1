package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		in   string // JSON, decoded with numbers kept exact
		want string
	}{
		{`{"b": 1, "a": [true, false, null], "c": {"z": "", "y": {}}}`, `{"a":[true,false,null],"b":1,"c":{"y":{},"z":""}}`},
		{`{"é": 1, "e": 2, "E": 3, "ä": 4}`, `{"E":3,"e":2,"ä":4,"é":1}`},
		{`"tab\tnewline\ncr\rquote\"backslash\\"`, `"tab\tnewline\ncr\rquote\"backslash\\"`},
		{`"\u0000\u001f\u007f<>&\u2028é😀"`, "\"\\u0000\\u001f\u007f<>&\u2028é😀\""},
		{`"\/"`, `"/"`},
		{`[]`, `[]`},

		// Numbers: exact, one spelling per value.
		{`1`, `1`},
		{`1.0`, `1`},
		{`10e-1`, `1`},
		{`0.1e1`, `1`},
		{`-0`, `0`},
		{`-0.0e5`, `0`},
		{`1.50`, `1.5`},
		{`-12.3400e2`, `-1234`},
		{`100`, `100`},
		{`1E2`, `100`},
		{`0.000001`, `0.000001`},
		{`0.0000001`, `1e-7`},
		{`123e-20`, `1.23e-18`},
		{`1e21`, `1e+21`},
		{`100000000000000000000`, `100000000000000000000`},
		{`123456789012345678901`, `123456789012345678901`},
		{`1234567890123456789012`, `1.234567890123456789012e+21`},
		{`9007199254740993`, `9007199254740993`},
		{`9007199254740992.5`, `9007199254740992.5`},
		{`1E400`, `1e+400`},
		{`-1e-400`, `-1e-400`},
	}
	for _, tt := range tests {
		v, err := Decode([]byte(tt.in))
		if err != nil {
			t.Fatalf("decode %s: %v", tt.in, err)
		}
		got, err := JSON(v)
		if err != nil {
			t.Errorf("JSON(%s): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("JSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestJSONGoValues(t *testing.T) {
	type point struct {
		X int     `json:"x"`
		Y float64 `json:"y"`
	}
	tests := []struct {
		in   any
		want string
	}{
		{float64(0.1), `0.1`},
		{float64(1e21), `1e+21`},
		{float32(0.1), `0.1`},
		{int64(math.MaxInt64), `9223372036854775807`},
		{uint64(math.MaxUint64), `18446744073709551615`},
		{int8(-3), `-3`},
		{json.RawMessage(`{"b":1.0,"a":2}`), `{"a":2,"b":1}`},
		{map[string]string{"b": "x", "a": "y"}, `{"a":"y","b":"x"}`},
		{[]int{3, 1}, `[3,1]`},
		{point{X: 1, Y: 2.50}, `{"x":1,"y":2.5}`},
		{struct {
			B int    `json:"b"`
			A string `json:"a"`
		}{2, "x"}, `{"a":"x","b":2}`},
		{map[string]any{"b": 1.0, "a": []any{true, nil}, "c": map[string]any{"z": "x", "y": "w"}},
			`{"a":[true,null],"b":1,"c":{"y":"w","z":"x"}}`},
		// Code point order: U+FB01 sorts before U+1F600, though UTF-16 (and
		// so JCS) puts U+1F600's surrogates (D83D DE00) first.
		{map[string]any{"\U0001F600": 1.0, "\uFB01": 2.0, "a": 3.0}, `{"a":3,"ﬁ":2,"😀":1}`},
		{[]any{json.Number("1.0"), json.Number("1e2"), json.Number("-0"), json.Number("0.1"), 1e21, 1e-7, 123456789.0, json.Number("-0.0")},
			`[1,100,0,0.1,1e+21,1e-7,123456789,0]`},
		{[]any{json.Number("12345678901234567890"), json.Number("12345678901234567891")},
			`[12345678901234567890,12345678901234567891]`},
		{"a\"b\\c\n\u0001<>&\u2028é", `"a\"b\\c\n\u0001<>&` + "\u2028" + `é"`},
	}
	for _, tt := range tests {
		got, err := JSON(tt.in)
		if err != nil {
			t.Errorf("JSON(%#v): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("JSON(%#v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"NaN", math.NaN(), "NaN is not a JSON number"},
		{"infinity", map[string]any{"x": math.Inf(1)}, "+Inf is not a JSON number"},
		{"invalid UTF-8", []any{"a\xffb"}, "a string is not valid UTF-8"},
		{"invalid UTF-8 key", map[string]any{"\xff": 1}, "a string is not valid UTF-8"},
		{"bad number", json.Number("01"), `"01": not a JSON number`},
		{"not a number", json.Number("NaN"), `"NaN": not a JSON number`},
		{"trailing dot", json.Number("1."), `"1.": not a JSON number`},
		{"leading dot", json.Number(".5"), `".5": not a JSON number`},
		{"plus", json.Number("+1"), `"+1": not a JSON number`},
		{"empty exponent", json.Number("1e"), `"1e": not a JSON number`},
		{"hex", json.Number("0x10"), `"0x10": not a JSON number`},
		{"huge exponent", json.Number("1e99999999999"), `"1e99999999999": the exponent of 1e99999999999… is out of range`},
		{"huge exponent once normalised", json.Number("10e1000000000"), `"10e1000000000": the exponent of 10e1000000000… is out of range`},
		{"tiny exponent once normalised", json.Number("0.01e-999999999"), `"0.01e-999999999": the exponent of 0.01e-999999999… is out of range`},
		{"raw message", json.RawMessage(`{"a":1} x`), "invalid JSON: more than one value"},
		{"channel", make(chan int), "encode chan int: json: unsupported type: chan int"},
		{"function", []any{func() {}}, "encode func(): json: unsupported type: func()"},
		{"too deep", deep(maxDepth + 2), "nested deeper than 10000 levels"},
	}
	for _, tt := range tests {
		_, err := JSON(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: JSON error = %v, want %s", tt.name, err, tt.want)
		}
	}
}

// deep returns n nested arrays: the innermost is at depth n-1.
func deep(n int) any {
	var v any = []any{}
	for range n - 1 {
		v = []any{v}
	}
	return v
}

func TestDisplay(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{"plain", `"plain"`},
		{"tab\tDEL\x7fC1\u0085LS\u2028PS\u2029RLO\u202eZWJ\u200dtag\U000E0041é😀",
			`"tab\tDEL\u007fC1\u0085LS\u2028PS\u2029RLO\u202eZWJ\u200dtag\udb40\udc41é😀"`},
		{map[string]any{"\u202e": []any{json.Number("1.0"), "\u200b"}}, `{"\u202e":[1,"\u200b"]}`},
	}
	for _, tt := range tests {
		got, err := Display(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Display(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := Display("a\xffb"); err == nil || err.Error() != "a string is not valid UTF-8" {
		t.Errorf("Display of invalid UTF-8: error %v, want a string is not valid UTF-8", err)
	}
}

func TestHash(t *testing.T) {
	decode := func(s string) any {
		t.Helper()
		v, err := Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := decode(`{"path": "a.txt", "n": 1.0, "tags": ["x", "y"]}`)
	same := decode(`{"tags":["x","y"],"n":1,"path":"a.txt"}`)
	if Hash(a) != Hash(same) {
		t.Errorf("equal JSON hashes differently: %s vs %s", Hash(a), Hash(same))
	}
	for _, other := range []string{
		`{"path": "b.txt", "n": 1, "tags": ["x", "y"]}`,
		`{"path": "a.txt", "n": 1, "tags": ["y", "x"]}`,
		`{"path": "a.txt", "n": "1", "tags": ["x", "y"]}`,
		`{"path": "a.txt", "n": 1, "tags": ["x", "y"], "extra": null}`,
		`{"path": "a.txt", "n": 1.0000000000000000000001, "tags": ["x", "y"]}`,
	} {
		if Hash(a) == Hash(decode(other)) {
			t.Errorf("different JSON hashes alike: %s", other)
		}
	}
	if got := Hash(a); !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(got) {
		t.Errorf("Hash = %q, want sha256: and 64 hex digits", got)
	}
	if Hash(make(chan int)) == Hash(a) {
		t.Error("an unencodable value hashes like a real one")
	}
	// The SHA-256 of the bytes JSON gives, and of the type's name for a
	// value without a canonical form.
	if got, want := Hash(same), "sha256:"+sha256Hex(`{"n":1,"path":"a.txt","tags":["x","y"]}`); got != want {
		t.Errorf("Hash = %s, want %s", got, want)
	}
	if got, want := Hash(math.NaN()), "sha256:"+sha256Hex("unencodable float64"); got != want {
		t.Errorf("Hash(NaN) = %s, want %s", got, want)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestNumberScaled(t *testing.T) {
	tests := []struct {
		lit   string
		shift int64
		want  int64
		ok    bool
	}{
		{"5", 0, 5, true},
		{"5.0", 0, 5, true},
		{"5e0", 0, 5, true},
		{"-0", 0, 0, true},
		{"1.5", 0, 0, false},
		{"1.5", 4, 15000, true},
		{"-0.0001", 4, -1, true},
		{"0.00001", 4, 0, false},
		{"9223372036854775807", 0, math.MaxInt64, true},
		{"9223372036854775808", 0, 0, false},
		{"-9223372036854775808", 0, math.MinInt64, true},
		{"1e19", 0, 0, false},
		{"1e400", 0, 0, false},
	}
	for _, tt := range tests {
		n, err := ParseNumber(tt.lit)
		if err != nil {
			t.Fatalf("ParseNumber(%s): %v", tt.lit, err)
		}
		if got, ok := n.Scaled(tt.shift); ok != tt.ok || ok && got != tt.want {
			t.Errorf("ParseNumber(%s).Scaled(%d) = %d, %v; want %d, %v", tt.lit, tt.shift, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNumberOf(t *testing.T) {
	tests := []struct {
		in   any
		want string // "" when v is not a number
	}{
		{json.Number("1.50"), "1.5"},
		{float64(0.1), "0.1"},
		{float32(0.1), "0.1"},
		{int8(-3), "-3"},
		{int(42), "42"},
		{int64(math.MinInt64), "-9223372036854775808"},
		{uint8(255), "255"},
		{uint64(math.MaxUint64), "18446744073709551615"},
		{"1", ""},
		{true, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		n, ok, err := NumberOf(tt.in)
		if err != nil || ok != (tt.want != "") || ok && n.String() != tt.want {
			t.Errorf("NumberOf(%#v) = %s, %v, %v; want %q", tt.in, n, ok, err, tt.want)
		}
	}
	if _, ok, err := NumberOf(math.Inf(-1)); !ok || err == nil {
		t.Errorf("NumberOf(-Inf) = %v, %v; want a number that is an error", ok, err)
	}
}

// FuzzJSON checks that canonical JSON is valid JSON, is its own
// canonical form, and keeps numbers' values.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,2e3,-0]}`, `"\u2028\ud83d\ude00"`, `[1e400, 0.0000001, 123456789012345678901]`,
		`{"":{"":[]}}`, `"\u0000"`, `1E+2`, `-0.0`, `[true,false,null]`,
		`{"b":1,"a":[1.0,-0,1e400]}`, `"\u00e9\ud83d\ude00"`, `[{"":null}]`, `123456789012345678901234567890`, `0.1e-5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data)
		if err != nil {
			return
		}
		c1, err := JSON(v)
		if err != nil {
			if strings.Contains(err.Error(), "UTF-8") || strings.Contains(err.Error(), "out of range") {
				return
			}
			t.Fatalf("JSON of decoded %q: %v", data, err)
		}
		if !json.Valid(c1) {
			t.Fatalf("JSON(%q) = %q, not valid JSON", data, c1)
		}
		v2, err := Decode(c1)
		if err != nil {
			t.Fatalf("decode canonical %q: %v", c1, err)
		}
		c2, err := JSON(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not stable: %q then %q (%v)", c1, c2, err)
		}
		if n, ok := v.(json.Number); ok {
			a, errA := ParseNumber(string(n))
			b, errB := ParseNumber(string(c1))
			if errA != nil || errB != nil || a != b {
				t.Fatalf("number %s became %s", n, c1)
			}
		}
	})
}
