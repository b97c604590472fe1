//go:build race

package schema

// raceEnabled reports whether the race detector is on; it makes sync.Pool drop
// items at random, so allocation counts are not meaningful.
const raceEnabled = true
