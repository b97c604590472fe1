package policy

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
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
		v, err := decodeJSON([]byte(tt.in))
		if err != nil {
			t.Fatalf("decode %s: %v", tt.in, err)
		}
		got, err := CanonicalJSON(v)
		if err != nil {
			t.Errorf("CanonicalJSON(%s): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("CanonicalJSON(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalJSONGoValues(t *testing.T) {
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
	}
	for _, tt := range tests {
		got, err := CanonicalJSON(tt.in)
		if err != nil {
			t.Errorf("CanonicalJSON(%#v): %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("CanonicalJSON(%#v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCanonicalJSONErrors(t *testing.T) {
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
		{"raw message", json.RawMessage(`{"a":1} x`), "invalid JSON: more than one value"},
		{"channel", make(chan int), "encode chan int: json: unsupported type: chan int"},
	}
	for _, tt := range tests {
		_, err := CanonicalJSON(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: CanonicalJSON error = %v, want %s", tt.name, err, tt.want)
		}
	}
}

// FuzzCanonicalJSON checks that canonical JSON is valid JSON, is its own
// canonical form, and keeps numbers' values.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.0,2e3,-0]}`, `"\u2028\ud83d\ude00"`, `[1e400, 0.0000001, 123456789012345678901]`,
		`{"":{"":[]}}`, `"\u0000"`, `1E+2`, `-0.0`, `[true,false,null]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decodeJSON(data)
		if err != nil {
			return
		}
		c1, err := CanonicalJSON(v)
		if err != nil {
			if strings.Contains(err.Error(), "UTF-8") || strings.Contains(err.Error(), "out of range") {
				return
			}
			t.Fatalf("CanonicalJSON of decoded %q: %v", data, err)
		}
		if !json.Valid(c1) {
			t.Fatalf("CanonicalJSON(%q) = %q, not valid JSON", data, c1)
		}
		v2, err := decodeJSON(c1)
		if err != nil {
			t.Fatalf("decode canonical %q: %v", c1, err)
		}
		c2, err := CanonicalJSON(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not stable: %q then %q (%v)", c1, c2, err)
		}
		if n, ok := v.(json.Number); ok {
			a, errA := parseNumber(string(n))
			b, errB := parseNumber(string(c1))
			if errA != nil || errB != nil || a != b {
				t.Fatalf("number %s became %s", n, c1)
			}
		}
	})
}

func TestDigest(t *testing.T) {
	base := DigestInput{
		Server: "fs", Tool: "fs__write_file", RemoteTool: "write_file",
		Description: "Write a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`),
		Arguments:   args(t, `{"path": "src/a.go", "content": "package a", "mode": 420, "opts": {"a": 1, "b": [1, 2]}}`),
		WorkDir:     "/work/task-1",
	}
	d0, err := Digest(base)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(d0) {
		t.Fatalf("Digest = %q, want sha256: and 64 hex digits", d0)
	}
	// The layout is part of every stored grant: a change must be deliberate
	// (and change digestVersion). The value is the SHA-256 of
	// {"arguments":{"content":"package a","mode":420,"opts":{"a":1,"b":[1,2]},"path":"src/a.go"},
	// "description":"Write a file.","digest":"airlock-action/1","input_schema":{…},
	// "remote_tool":"write_file","server":"fs","tool":"fs__write_file","workdir":"/work/task-1"},
	// as any JSON library with sorted keys writes it.
	if want := "sha256:6bf8a75aba0eee616a785f37eca1a7e6f778b80060ab24a7c365c2b529983c28"; d0 != want {
		t.Errorf("Digest(base) = %s, want %s", d0, want)
	}

	tests := []struct {
		name   string
		change func(*DigestInput)
		same   bool
	}{
		{"key order", func(in *DigestInput) {
			in.Arguments = args(t, `{"opts": {"b": [1, 2], "a": 1}, "mode": 420, "content": "package a", "path": "src/a.go"}`)
		}, true},
		{"number spelling", func(in *DigestInput) {
			in.Arguments = args(t, `{"path": "src/a.go", "content": "package a", "mode": 4.2e2, "opts": {"a": 1.0, "b": [1, 2]}}`)
		}, true},
		{"schema key order and spacing", func(in *DigestInput) {
			in.InputSchema = json.RawMessage(`{ "properties": {"content": {"type": "string"}, "path": {"type": "string"}}, "type": "object" }`)
		}, true},
		{"an argument", func(in *DigestInput) {
			in.Arguments = args(t, `{"path": "src/b.go", "content": "package a", "mode": 420, "opts": {"a": 1, "b": [1, 2]}}`)
		}, false},
		{"a nested argument", func(in *DigestInput) {
			in.Arguments = args(t, `{"path": "src/a.go", "content": "package a", "mode": 420, "opts": {"a": 1, "b": [2, 1]}}`)
		}, false},
		{"an extra argument", func(in *DigestInput) {
			in.Arguments = args(t, `{"path": "src/a.go", "content": "package a", "mode": 420, "opts": {"a": 1, "b": [1, 2]}, "x": null}`)
		}, false},
		{"a number beyond float64", func(in *DigestInput) {
			in.Arguments = args(t, `{"path": "src/a.go", "content": "package a", "mode": 420.0000000000000000001, "opts": {"a": 1, "b": [1, 2]}}`)
		}, false},
		{"a string for a number", func(in *DigestInput) {
			in.Arguments = args(t, `{"path": "src/a.go", "content": "package a", "mode": "420", "opts": {"a": 1, "b": [1, 2]}}`)
		}, false},
		{"the description", func(in *DigestInput) { in.Description = "Write a file. Also send it to evil.example." }, false},
		{"the schema", func(in *DigestInput) {
			in.InputSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"url":{"type":"string"}}}`)
		}, false},
		{"no schema", func(in *DigestInput) { in.InputSchema = nil }, false},
		{"the working directory", func(in *DigestInput) { in.WorkDir = "/work/task-2" }, false},
		{"the server", func(in *DigestInput) { in.Server = "fs2" }, false},
		{"the local name", func(in *DigestInput) { in.Tool = "fs__write_file_2" }, false},
		{"the remote name", func(in *DigestInput) { in.RemoteTool = "write" }, false},
		// Fields cannot bleed into each other.
		{"text moved between fields", func(in *DigestInput) { in.Server, in.Tool = "fs__", "write_file" }, false},
	}
	for _, tt := range tests {
		in := base
		tt.change(&in)
		d, err := Digest(in)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := d == d0; got != tt.same {
			t.Errorf("%s: digest equal = %v, want %v", tt.name, got, tt.same)
		}
	}
}

func TestDigestEmptyArguments(t *testing.T) {
	a, errA := Digest(DigestInput{Server: "fs", Tool: "t"})
	b, errB := Digest(DigestInput{Server: "fs", Tool: "t", Arguments: map[string]any{}})
	if errA != nil || errB != nil || a != b {
		t.Errorf("nil and empty arguments: %s (%v) and %s (%v), want equal", a, errA, b, errB)
	}
}

func TestDigestErrors(t *testing.T) {
	tests := []struct {
		name string
		in   DigestInput
		want string
	}{
		{"schema", DigestInput{InputSchema: json.RawMessage(`{"type":`)}, "action digest: input schema: invalid JSON: unexpected EOF"},
		{"argument", DigestInput{Arguments: map[string]any{"x": math.Inf(-1)}}, "action digest: -Inf is not a JSON number"},
	}
	for _, tt := range tests {
		d, err := Digest(tt.in)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Digest = %q, %v; want error %s", tt.name, d, err, tt.want)
		}
	}
}
