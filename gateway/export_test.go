package gateway

// Opening reports how many initialize requests and subscription streams
// the gateway counts as open, for tests that must wait for a client's
// stream to reach it.
func (g *Gateway) Opening() int {
	g.sessionMu.Lock()
	defer g.sessionMu.Unlock()
	return g.opening
}
