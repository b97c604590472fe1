package schema

import (
	"bytes"
	"crypto/sha256"
	"sync"
)

// A Cache keeps schemas that [Compile] accepted, so that a schema seen
// again (large catalogs repeat one schema for many tools, and a server is
// discovered again on every restart, list change and warm start) costs
// its decoding and canonical encoding, not the checks and the library's
// compilation again. An entry is found by the canonical text of the
// document and the limits it was compiled under, and used only when that
// text is byte for byte the same: two documents that differ in anything
// but insignificant space and key order never share a [Schema]. Only
// accepted schemas are kept; a refused one is checked again each time,
// and is refused with the same error.
//
// A [Schema] is immutable, so one may be handed to any number of tools
// and validate for them concurrently. A Cache is safe for concurrent use;
// the zero value is not usable: use [NewCache].
type Cache struct {
	mu       sync.Mutex
	entries  map[cacheKey]*Schema
	order    []cacheKey // oldest first: the first to go when the cache is full
	size     int        // bytes of canonical text kept
	maxBytes int
	maxCount int
}

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
	return &Cache{entries: map[cacheKey]*Schema{}, maxCount: maxSchemas, maxBytes: maxBytes}
}

func keyOf(canonical []byte, l compileLimits) cacheKey {
	return cacheKey{sum: sha256.Sum256(canonical), limits: l}
}

// get returns the schema compiled from exactly canonical under the same
// limits, or nil.
func (c *Cache) get(k cacheKey, canonical []byte) *Schema {
	c.mu.Lock()
	s := c.entries[k]
	c.mu.Unlock()
	if s == nil || !bytes.Equal(s.canonical, canonical) {
		return nil
	}
	return s
}

// put keeps s under k, dropping the oldest entries while it does not fit.
// A schema larger than the whole cache is not kept.
func (c *Cache) put(k cacheKey, s *Schema) {
	n := len(s.canonical)
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
		c.size -= len(c.entries[old].canonical)
		delete(c.entries, old)
	}
	c.entries[k] = s
	c.order = append(c.order, k)
	c.size += n
}

// Len returns the number of schemas kept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
