package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"object", `{"a": 1, "b": [true, false, null], "c": {"d": "e"}}`,
			map[string]any{"a": json.Number("1"), "b": []any{true, false, nil}, "c": map[string]any{"d": "e"}}},
		{"scalar", ` "x" `, "x"},
		{"empty containers", `[{}, []]`, []any{map[string]any{}, []any{}}},
		{"escapes", `"\"\\\/\b\f\n\r\t\u00e9\u20ac"`, "\"\\/\b\f\n\r\té€"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"escaped NUL is valid JSON", `"a\u0000b"`, "a\x00b"},
		{"raw UTF-8", `{"ключ": "värde"}`, map[string]any{"ключ": "värde"}},
		{"escaped key equals plain key only once", `{"\u0061": 1}`, map[string]any{"a": json.Number("1")}},
		{"huge integer keeps its digits", `123456789012345678901234567890`, json.Number("123456789012345678901234567890")},
		{"number forms", `[-0, 0.5, 1e3, 1E-3, -1.25e+2]`,
			[]any{json.Number("-0"), json.Number("0.5"), json.Number("1e3"), json.Number("1E-3"), json.Number("-1.25e+2")}},
		{"exponent at the bound", `1e1000`, json.Number("1e1000")},
		{"case variants allowed without CaseFold", `{"path": 1, "Path": 2}`,
			map[string]any{"path": json.Number("1"), "Path": json.Number("2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.in), nil)
			if err != nil {
				t.Fatalf("Decode(%q) error: %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decode(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if err := Check([]byte(tt.in), nil); err != nil {
				t.Errorf("Check(%q) = %v, want nil", tt.in, err)
			}
		})
	}
}

func TestDecodeDepthLimit(t *testing.T) {
	for _, depth := range []int{2, 10, DefaultMaxDepth} {
		v, err := Decode([]byte(strings.Repeat(`{"a":[`, depth/2)+strings.Repeat(`]}`, depth/2)), nil)
		if err != nil {
			t.Fatalf("depth %d: %v", depth, err)
		}
		if got := valueDepth(v); got != depth/2*2 {
			t.Errorf("depth of decoded value = %d, want %d", got, depth/2*2)
		}
	}
}

// decodeErrorTests are inputs Decode refuses, with where and why.
var decodeErrorTests = []struct {
	name      string
	in        string
	opts      *DecodeOptions
	ptr       string
	code      decodeCode
	reasonHas string
}{
	{"empty", ``, nil, "", codeSyntax, "empty input"},
	{"only space", " \n\t", nil, "", codeSyntax, "empty input"},
	{"byte order mark", "\xef\xbb\xbf{}", nil, "", codeSyntax, "byte order mark"},
	{"trailing value", `{} {}`, nil, "", codeSyntax, "after the JSON value at byte 3"},
	{"trailing garbage", `[1]x`, nil, "", codeSyntax, "after the JSON value"},
	{"not JSON", `{a: 1}`, nil, "", codeSyntax, "expected a string key"},
	{"single quotes", `['a']`, nil, "/0", codeSyntax, "expected a JSON value"},
	{"trailing comma", `{"a": [1,]}`, nil, "/a/1", codeSyntax, "expected a JSON value"},
	{"missing colon", `{"a" 1}`, nil, "/a", codeSyntax, "expected ':'"},
	{"unterminated string", `{"a": "b`, nil, "/a", codeSyntax, "unterminated string"},
	{"raw newline in string", "[\"a\nb\"]", nil, "/0", codeSyntax, "control character U+000A"},
	{"bad escape", `"\x41"`, nil, "", codeSyntax, "invalid escape"},
	{"short unicode escape", `"\u12"`, nil, "", codeSyntax, "four hexadecimal digits"},
	{"leading zero", `01`, nil, "", codeSyntax, "after the JSON value"},
	{"bare minus", `-`, nil, "", codeSyntax, "expected a digit"},
	{"no fraction digits", `1.`, nil, "", codeSyntax, "after the decimal point"},
	{"no exponent digits", `1e+`, nil, "", codeSyntax, "exponent"},
	{"NaN", `NaN`, nil, "", codeSyntax, "expected a JSON value"},
	{"truncated literal", `[tru]`, nil, "/0", codeSyntax, "expected true"},

	{"invalid UTF-8 in value", "{\"a\": {\"b\": \"x\xffy\"}}", nil, "/a/b", codeUTF8, "invalid UTF-8 byte 0xff"},
	{"invalid UTF-8 in key", "{\"a\": {\"k\xc3\": 1}}", nil, "/a", codeUTF8, "invalid UTF-8"},
	{"overlong encoding", "\"\xc0\xaf\"", nil, "", codeUTF8, "invalid UTF-8"},
	{"UTF-16 surrogate encoded as UTF-8", "\"\xed\xa0\x80\"", nil, "", codeUTF8, "invalid UTF-8"},
	{"invalid UTF-8 outside strings", "[1,\xff]", nil, "/1", codeSyntax, "byte 0xff"},

	{"lone high surrogate", `"\ud800"`, nil, "", codeSurrogate, "high surrogate"},
	{"high surrogate then letter", `{"k": "\ud800x"}`, nil, "/k", codeSurrogate, "high surrogate"},
	{"high surrogate then high surrogate", `"\ud800\ud800"`, nil, "", codeSurrogate, "high surrogate"},
	{"lone low surrogate", `["\udc00"]`, nil, "/0", codeSurrogate, "low surrogate"},
	{"lone surrogate in key", `{"\udfff": 1}`, nil, "", codeSurrogate, "low surrogate"},

	{"duplicate key", `{"a": 1, "a": 2}`, nil, "/a", codeDuplicate, `duplicate key "a"`},
	{"duplicate key at depth", `{"x": [0, {"y": {"k": 1, "j": 2, "k": 3}}]}`, nil, "/x/1/y/k", codeDuplicate, `duplicate key "k"`},
	{"duplicate via escape", `{"a": 1, "\u0061": 2}`, nil, "/a", codeDuplicate, `duplicate key "a"`},
	{"duplicate key with slash", `{"a/b": 1, "a/b": 2}`, nil, "/a~1b", codeDuplicate, `duplicate key "a/b"`},
	{"duplicate empty key", `{"": 1, "": 2}`, nil, "/", codeDuplicate, `duplicate key ""`},
	{"case-fold duplicate", `{"path": "a", "Path": "b"}`, &DecodeOptions{CaseFold: true}, "/Path", codeCaseFold, `key "Path" differs only in letter case from key "path"`},
	{"case-fold duplicate at depth", `{"a": [{"x": 1, "X": 2}]}`, &DecodeOptions{CaseFold: true}, "/a/0/X", codeCaseFold, "letter case"},
	{"case-fold Kelvin sign", `{"k": 1, "\u212a": 2}`, &DecodeOptions{CaseFold: true}, "/\u212a", codeCaseFold, "letter case"},
	{"case-fold long s", `{"ſ": 1, "S": 2}`, &DecodeOptions{CaseFold: true}, "/S", codeCaseFold, "letter case"},
	{"case-fold exact duplicate reported as duplicate", `{"a": 1, "a": 2}`, &DecodeOptions{CaseFold: true}, "/a", codeDuplicate, "duplicate key"},

	{"too deep", `[[[[1]]]]`, &DecodeOptions{MaxDepth: 3}, "/0/0/0", codeDepth, "deeper than 3 levels"},
	{"too deep objects", `{"a": {"b": {"c": {}}}}`, &DecodeOptions{MaxDepth: 3}, "/a/b/c", codeDepth, "deeper than 3"},
	{"default depth", strings.Repeat("[", 65) + strings.Repeat("]", 65), nil, strings.Repeat("/0", 64), codeDepth, "deeper than 64"},
	{"too large", `"0123456789"`, &DecodeOptions{MaxBytes: 8}, "", codeSize, "more than the limit of 8 bytes"},

	{"exponent too large", `{"n": 1e1001}`, nil, "/n", codeNumber, "exponent beyond"},
	{"exponent too small", `1E-99999999999999999999`, nil, "", codeNumber, "exponent beyond"},
	{"number too long", strings.Repeat("9", 1001), nil, "", codeNumber, "1001 characters long"},
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range decodeErrorTests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode([]byte(tt.in), tt.opts)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%q) = %v, %v; want a *DecodeError", tt.in, v, err)
			}
			if de.Pointer != tt.ptr || de.code != tt.code || !strings.Contains(de.Reason, tt.reasonHas) {
				t.Errorf("Decode(%q) error = {%q, %q, code %d}; want pointer %q, code %d, reason containing %q",
					tt.in, de.Pointer, de.Reason, de.code, tt.ptr, tt.code, tt.reasonHas)
			}
			if cerr := Check([]byte(tt.in), tt.opts); fmt.Sprint(cerr) != fmt.Sprint(err) {
				t.Errorf("Check(%q) = %v; want the same error as Decode: %v", tt.in, cerr, err)
			}
		})
	}
}

func TestDecodeErrorMessage(t *testing.T) {
	_, err := Decode([]byte(`{"args": {"path": 1, "path": 2}}`), nil)
	got := fmt.Sprint(err)
	want := `/args/path: duplicate key "path"; each key may appear only once in an object`
	if got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
}

// TestDecodeLargeObjects exercises the map-based duplicate detection used for
// objects with more than smallObject keys.
func TestDecodeLargeObjects(t *testing.T) {
	obj := func(extra ...string) string {
		var keys []string
		for i := range 40 {
			keys = append(keys, fmt.Sprintf(`"key%d": %d`, i, i))
		}
		return "{" + strings.Join(append(keys, extra...), ", ") + "}"
	}
	tests := []struct {
		name string
		in   string
		ptr  string
		code decodeCode
	}{
		{"no duplicates", obj(), "", 0},
		{"late duplicate", obj(`"key3": 0`), "/key3", codeDuplicate},
		{"late case variant", obj(`"KEY17": 0`), "/KEY17", codeCaseFold},
		{"nested large objects are independent", `{"a": ` + obj() + `, "b": ` + obj() + `}`, "", 0},
		{"duplicate in nested large object", `{"a": ` + obj() + `, "b": ` + obj(`"key39": 1`) + `}`, "/b/key39", codeDuplicate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, check := range []bool{false, true} {
				var err error
				if check {
					err = Check([]byte(tt.in), &DecodeOptions{CaseFold: true})
				} else {
					_, err = Decode([]byte(tt.in), &DecodeOptions{CaseFold: true})
				}
				if tt.ptr == "" {
					if err != nil {
						t.Fatalf("check=%v: error %v, want nil", check, err)
					}
					continue
				}
				var de *DecodeError
				if !errors.As(err, &de) || de.Pointer != tt.ptr || de.code != tt.code {
					t.Errorf("check=%v: error %#v, want pointer %q code %d", check, err, tt.ptr, tt.code)
				}
			}
		})
	}
}

// TestFoldKeyMatchesEqualFold checks the claim that foldKey equality is
// strings.EqualFold, over every rune that has case variants.
func TestFoldKeyMatchesEqualFold(t *testing.T) {
	var folding []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.SimpleFold(r) != r {
			folding = append(folding, r)
		}
	}
	if len(folding) < 2000 {
		t.Fatalf("found only %d runes with case variants", len(folding))
	}
	for _, r := range folding {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			a, b := string(r), string(f)
			if !strings.EqualFold(a, b) || foldKey([]byte(a)) != foldKey([]byte(b)) {
				t.Fatalf("%U and %U: EqualFold %v, foldKey %q vs %q", r, f, strings.EqualFold(a, b), foldKey([]byte(a)), foldKey([]byte(b)))
			}
		}
	}
	// Neighbouring runes from different orbits must not collide.
	for i := 1; i < len(folding); i++ {
		a, b := string(folding[i-1]), string(folding[i])
		if got, want := foldKey([]byte(a)) == foldKey([]byte(b)), strings.EqualFold(a, b); got != want {
			t.Errorf("%U vs %U: foldKey equal %v, EqualFold %v", folding[i-1], folding[i], got, want)
		}
	}
}

// TestCheckAllocations verifies that Check reuses its parser, so checking a
// message allocates nothing however many values it has.
func TestCheckAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop parsers at random")
	}
	small := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}`)
	var items []string
	for i := range 200 {
		items = append(items, fmt.Sprintf(`{"type":"text","text":"line %d \u00e9","n":%d.5,"ok":true}`, i, i))
	}
	large := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[` + strings.Join(items, ",") + `]}}`)
	opts := &DecodeOptions{CaseFold: true}
	allocs := func(data []byte) float64 {
		return testing.AllocsPerRun(50, func() {
			if err := Check(data, opts); err != nil {
				t.Fatal(err)
			}
		})
	}
	if s, l := allocs(small), allocs(large); s != 0 || l != 0 {
		t.Errorf("Check allocates %v times for a small message and %v for one with 200 times more values; want 0", s, l)
	}
}

// TestDecodeErrorLongKey: a huge key on the way to an error is cut in the
// pointer, so that the message stays short.
func TestDecodeErrorLongKey(t *testing.T) {
	key := strings.Repeat("k", 100000)
	_, err := Decode([]byte(`{"args": {"`+key+`": "\ud800"}}`), nil)
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Decode error = %v, want a *DecodeError", err)
	}
	if want := "/args/" + strings.Repeat("k", 64) + "…"; de.Pointer != want {
		t.Errorf("pointer = %.100q… (%d bytes), want %q", de.Pointer, len(de.Pointer), want)
	}
}
