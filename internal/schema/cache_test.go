package schema

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
)

func compileWith(t *testing.T, doc string, opts *CompileOptions) *Schema {
	t.Helper()
	s, err := Compile(json.RawMessage(doc), opts)
	if err != nil {
		t.Fatalf("Compile(%s): %v", doc, err)
	}
	return s
}

// TestCacheSameText: a cached schema is given back only for the same
// canonical text under the same limits. Documents that differ in a
// keyword, a description or the limits they are compiled under get
// schemas of their own, which validate as their own text says.
func TestCacheSameText(t *testing.T) {
	c := NewCache(0, 0)
	opts := &CompileOptions{Cache: c}
	base := `{"type":"object","properties":{"name":{"type":"string","maxLength":3}}}`
	first := compileWith(t, base, opts)

	if same := compileWith(t, base, opts); same != first {
		t.Errorf("the same document was compiled again")
	}
	// Another layout is other text: compiled on its own, to the same
	// canonical form.
	other := compileWith(t, `{ "properties": {"name": {"maxLength": 3, "type": "string"}}, "type": "object" }`, opts)
	if other == first || string(other.JSON()) != string(first.JSON()) {
		t.Errorf("another layout of the document: %s, want its own schema of %s", other.JSON(), first.JSON())
	}

	longer := compileWith(t, `{"type":"object","properties":{"name":{"type":"string","maxLength":4}}}`, opts)
	if longer == first {
		t.Fatalf("a document with another maxLength got the cached schema")
	}
	four := map[string]any{"name": "abcd"}
	if err := first.Validate(four); err == nil {
		t.Errorf("maxLength 3 accepted %v", four)
	}
	if err := longer.Validate(four); err != nil {
		t.Errorf("maxLength 4 refused %v: %v", four, err)
	}

	described := compileWith(t, `{"type":"object","description":"Names.","properties":{"name":{"type":"string","maxLength":3}}}`, opts)
	if described == first || string(described.JSON()) == string(first.JSON()) {
		t.Errorf("a document with a description got the schema of one without: %s", described.JSON())
	}

	// The same text under other limits is compiled under those limits.
	strict := &CompileOptions{Cache: c, RequireObject: true}
	if s := compileWith(t, base, strict); s == first {
		t.Errorf("a schema compiled without RequireObject was given for RequireObject")
	}
	if _, err := Compile(json.RawMessage(`{"type":"string"}`), &CompileOptions{Cache: c}); err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(json.RawMessage(`{"type":"string"}`), strict); err == nil {
		t.Errorf("a cached non-object schema passed RequireObject")
	}
	email := `{"type":"string","format":"email"}`
	annotated := compileWith(t, email, &CompileOptions{Cache: c})
	asserted := compileWith(t, email, &CompileOptions{Cache: c, AssertFormat: true})
	if err := annotated.Validate("not an address"); err != nil {
		t.Errorf("format as an annotation refused a value: %v", err)
	}
	if err := asserted.Validate("not an address"); err == nil {
		t.Errorf("format as an assertion was served the annotation's schema")
	}
}

// TestCacheRefusals: a refused schema is not kept, and is refused again
// with the same error; a limit tighter than the one a cached schema was
// compiled under still refuses it.
func TestCacheRefusals(t *testing.T) {
	c := NewCache(0, 0)
	bad := json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`)
	_, want := Compile(bad, nil)
	if want == nil {
		t.Fatal("the bad schema compiled")
	}
	for range 2 {
		_, err := Compile(bad, &CompileOptions{Cache: c})
		if err == nil || err.Error() != want.Error() {
			t.Errorf("with a cache: %v; want %v", err, want)
		}
	}
	if n := c.Len(); n != 0 {
		t.Errorf("the cache keeps %d schemas after refusals, want 0", n)
	}

	doc := json.RawMessage(`{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"string"}}}}}`)
	if _, err := Compile(doc, &CompileOptions{Cache: c}); err != nil {
		t.Fatal(err)
	}
	_, want = Compile(doc, &CompileOptions{MaxDepth: 3})
	if want == nil {
		t.Fatal("MaxDepth 3 accepted a deeper schema")
	}
	if _, err := Compile(doc, &CompileOptions{Cache: c, MaxDepth: 3}); err == nil || err.Error() != want.Error() {
		t.Errorf("with a cache filled under the defaults: %v; want %v", err, want)
	}
}

// TestCacheChecksText: an entry is used only when its text is the
// document's, byte for byte, whatever its key.
func TestCacheChecksText(t *testing.T) {
	c := NewCache(0, 0)
	a := compileWith(t, `{"type":"string"}`, nil)
	b := compileWith(t, `{"type":"number"}`, nil)
	l := (*CompileOptions)(nil).limits()
	c.put(keyOf(a.JSON(), l), b.JSON(), b) // as if b's text had a's hash
	if got := c.get(keyOf(a.JSON(), l), a.JSON()); got != nil {
		t.Errorf("the cache gave %s for %s", got.JSON(), a.JSON())
	}
	if got := compileWith(t, `{"type":"string"}`, &CompileOptions{Cache: c}); string(got.JSON()) != `{"type":"string"}` {
		t.Errorf("Compile gave %s for {\"type\":\"string\"}", got.JSON())
	}
}

func TestCacheBounds(t *testing.T) {
	doc := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"type":"string","maxLength":%d}`, i))
	}
	c := NewCache(2, 0)
	for i := range 3 {
		compileWith(t, string(doc(i)), &CompileOptions{Cache: c})
	}
	if n := c.Len(); n != 2 {
		t.Errorf("a cache for 2 schemas keeps %d", n)
	}
	// The oldest went first: the newest is still there.
	newest := compileWith(t, string(doc(2)), &CompileOptions{Cache: c})
	if again := compileWith(t, string(doc(2)), &CompileOptions{Cache: c}); again != newest {
		t.Errorf("the newest schema was dropped")
	}

	size := len(doc(0)) + len(`{"maxLength":0,"type":"string"}`) // the text and the canonical form
	c = NewCache(0, 2*size)
	for i := range 3 {
		compileWith(t, string(doc(i)), &CompileOptions{Cache: c})
	}
	if n := c.Len(); n != 2 {
		t.Errorf("a cache for %d bytes keeps %d schemas of %d bytes", 2*size, n, size)
	}
	c = NewCache(0, size-1)
	compileWith(t, string(doc(0)), &CompileOptions{Cache: c})
	if n := c.Len(); n != 0 {
		t.Errorf("a cache smaller than a schema keeps %d schemas", n)
	}
}

// TestCacheConcurrent: one cache and the schemas it hands out are used
// from many goroutines at once (run with -race).
func TestCacheConcurrent(t *testing.T) {
	c := NewCache(4, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				n := (g + i) % 6
				s, err := Compile(json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"a":{"type":"string","maxLength":%d}}}`, n)), &CompileOptions{Cache: c})
				if err != nil {
					t.Error(err)
					return
				}
				long := map[string]any{"a": "abcdefgh"[:n+1]}
				if err := s.Validate(long); err == nil {
					t.Errorf("maxLength %d accepted %v", n, long)
				}
				if err := s.Validate(map[string]any{"a": "abcdefgh"[:n]}); err != nil {
					t.Errorf("maxLength %d: %v", n, err)
				}
			}
		})
	}
	wg.Wait()
}

// TestCacheKeepsItsText: text the caller changes after Compile changes
// nothing the cache holds: the changed text is compiled as it now is, and
// the text as it was still finds its schema.
func TestCacheKeepsItsText(t *testing.T) {
	c := NewCache(0, 0)
	text := []byte(`{"type":"string","maxLength":3}`)
	first, err := Compile(text, &CompileOptions{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	copy(text[len(text)-2:], "4}")
	got, err := Compile(text, &CompileOptions{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	if got == first || got.Validate("abcd") != nil {
		t.Errorf("after the text changed to %s, Compile gave %s", text, got.JSON())
	}
	if again := compileWith(t, `{"type":"string","maxLength":3}`, &CompileOptions{Cache: c}); again != first {
		t.Errorf("the text as it was no longer finds its schema")
	}
}
