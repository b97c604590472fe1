package gateway

import "time"

// Opening reports how many initialize requests and subscription streams
// the gateway counts as open, for tests that must wait for a client's
// stream to reach it.
func (g *Gateway) Opening() int {
	g.sessionMu.Lock()
	defer g.sessionMu.Unlock()
	return g.opening
}

// SetPickupWithin sets how long a round handed to another replica may
// wait to be taken, and returns the function that restores it.
func SetPickupWithin(d time.Duration) (restore func()) {
	old := pickupWithin
	pickupWithin = d
	return func() { pickupWithin = old }
}
