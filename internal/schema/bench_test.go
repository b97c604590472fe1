package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var benchArgs = []byte(`{"path": "src/internal/schema/validate.go", "line_limit": 200, "offset": 0}`)

// benchResult is a typical tools/call response of about 4 KB.
var benchResult = func() []byte {
	var items []string
	for i := range 20 {
		items = append(items, fmt.Sprintf(`{"type": "text", "text": "line %d: the quick brown fox jumps over the lazy dog \u00e9\u00e8 \\n more text to make this longer"}`, i))
	}
	return []byte(`{"jsonrpc": "2.0", "id": 17, "result": {"content": [` + strings.Join(items, ", ") +
		`], "structuredContent": {"count": 20, "truncated": false, "path": "a/b.txt"}, "isError": false}}`)
}()

func BenchmarkDecode(b *testing.B) {
	benchmarkDocuments(b, func(data []byte, opts *DecodeOptions) error {
		_, err := Decode(data, opts)
		return err
	})
}

func BenchmarkCheck(b *testing.B) {
	benchmarkDocuments(b, Check)
}

// benchmarkDocuments runs decode over the arguments and the response of a
// typical call, as the host decodes them.
func benchmarkDocuments(b *testing.B, decode func(data []byte, opts *DecodeOptions) error) {
	for _, bc := range []struct {
		name string
		data []byte
	}{{"args", benchArgs}, {"result", benchResult}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := &DecodeOptions{CaseFold: true}
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := decode(bc.data, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncodingJSON is the baseline the decoder is compared with.
func BenchmarkEncodingJSON(b *testing.B) {
	b.SetBytes(int64(len(benchResult)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(benchResult, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	s := mustCompile(b, readFileSchema)
	for _, bc := range []struct {
		name  string
		value any
	}{
		{"decoded", mustDecode(b, string(benchArgs))},
		{"sdk", map[string]any{"path": "src/internal/schema/validate.go", "line_limit": 200.0, "offset": 0.0}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Validate(bc.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("invalid", func(b *testing.B) {
		v := mustDecode(b, `{"path": "a", "line_limit": 5000, "Offset": 1}`)
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(v); err == nil {
				b.Fatal("no error")
			}
		}
	})
}

func BenchmarkCheckCaseVariants(b *testing.B) {
	s := mustCompile(b, readFileSchema)
	v := mustDecode(b, string(benchArgs))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.CheckCaseVariants(v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(json.RawMessage(readFileSchema), &CompileOptions{RequireObject: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompileBomb measures how long refusing a 2 KB schema that expands
// to 2^20 nodes takes.
func BenchmarkCompileBomb(b *testing.B) {
	doc := json.RawMessage(anyOfBomb(20))
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(doc, nil); err == nil {
			b.Fatal("bomb compiled")
		}
	}
}
