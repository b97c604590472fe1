package schema

import (
	"bytes"
	"crypto/sha256"
	"sync"
)

// A Cache keeps schemas that [Compile] accepted, so that a schema seen
// again (large catalogs repeat one schema for many tools, and a server is
// discovered again on every restart, list change and warm start) costs
// no more than its JSON text, not the strict decoding, the checks and the
// library's compilation again. An entry is found by the JSON text of the
// document, as given or as encoding/json writes it, and the limits it was
// compiled under, and used only when that text is byte for byte the same:
// every check of Compile depends only on them, so a document that differs
// in anything, a space included, is compiled on its own. Only accepted
// schemas are kept; a refused one is checked again each time, and is
// refused with the same error.
//
// A [Schema] is immutable, so one may be handed to any number of tools
// and validate for them concurrently. A Cache is safe for concurrent use;
// the zero value is not usable: use [NewCache].
type Cache struct {
	mu       sync.Mutex
	entries  map[cacheKey]cached
	order    []cacheKey // oldest first: the first to go when the cache is full
	size     int        // bytes of text kept, the documents' and the canonical
	maxBytes int
	maxCount int
}

// cached is a compiled schema and the text it was compiled from.
type cached struct {
	text   []byte
	schema *Schema
}

func (c cached) size() int { return len(c.text) + len(c.schema.canonical) }

type cacheKey struct {
	sum    [sha256.Size]byte
	limits compileLimits
}

// Default bounds of a [Cache]. A compiled schema takes some times the
// memory of its canonical text, so both the number of schemas and their
// text are bounded.
const (
	DefaultCacheSchemas = 1024
	DefaultCacheBytes   = 4 << 20
)

// NewCache returns an empty cache that keeps at most maxSchemas schemas
// and maxBytes of their canonical text (0 means DefaultCacheSchemas and
// DefaultCacheBytes), dropping the oldest entries to make room.
func NewCache(maxSchemas, maxBytes int) *Cache {
	if maxSchemas <= 0 {
		maxSchemas = DefaultCacheSchemas
	}
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{entries: map[cacheKey]cached{}, maxCount: maxSchemas, maxBytes: maxBytes}
}

func keyOf(text []byte, l compileLimits) cacheKey {
	return cacheKey{sum: sha256.Sum256(text), limits: l}
}

// get returns the schema compiled from exactly text under the same limits,
// or nil.
func (c *Cache) get(k cacheKey, text []byte) *Schema {
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok || !bytes.Equal(e.text, text) {
		return nil
	}
	return e.schema
}

// put keeps s, compiled from text, under k, dropping the oldest entries
// while it does not fit. A schema larger than the whole cache is not kept.
// The text is copied: the caller's may change.
func (c *Cache) put(k cacheKey, text []byte, s *Schema) {
	e := cached{text: bytes.Clone(text), schema: s}
	n := e.size()
	if n > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		return
	}
	for c.size+n > c.maxBytes || len(c.order) >= c.maxCount {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= c.entries[old].size()
		delete(c.entries, old)
	}
	c.entries[k] = e
	c.order = append(c.order, k)
	c.size += n
}

// Len returns the number of schemas kept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
