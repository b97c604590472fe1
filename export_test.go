package airlock

import "time"

// SetLaneIdle sets how long a principal's lanes stay leased after its last
// call (acting.go), for tests, and returns what restores it. Hosts of the
// test must be closed before the restore runs.
func SetLaneIdle(d time.Duration) (restore func()) {
	old := laneIdle
	laneIdle = d
	return func() { laneIdle = old }
}
