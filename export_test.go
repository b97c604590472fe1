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

// LaneLeased reports whether p holds a lane on server, for tests.
func LaneLeased(h *Host, server string, p Principal) bool {
	for _, s := range h.servers {
		if s.cfg.ID == server {
			return s.laneOf(p) != nil
		}
	}
	return false
}

// SetLeaseTTL sets how long the leases of hosts opened afterwards outlive
// their last renewal (leases.go), for tests, and returns what restores it.
func SetLeaseTTL(d time.Duration) (restore func()) {
	old := leaseTTL
	leaseTTL = d
	return func() { leaseTTL = old }
}
