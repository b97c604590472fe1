package airlock

import (
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/catalog"
)

// ServerInstructions are what one server said about how to use it (the
// instructions of its initialize or server/discover result), as a model
// may read them.
type ServerInstructions struct {
	Server string
	// Text is the server's words: hidden characters made visible as in
	// tool descriptions, configured secrets scrubbed, at most
	// limits.max_description characters.
	Text string
	// Hidden counts the characters nobody would have seen (see
	// Tool.Hidden).
	Hidden int
}

// Instructions returns the instructions of the servers of snap whose
// configuration says instructions: include, and that gave any, in the
// order of their ids. A server's instructions are its own text:
// nothing of them reaches a model unless a person chose so for that
// server.
func (h *Host) Instructions(snap *Snapshot) []ServerInstructions {
	var out []ServerInstructions
	for _, id := range snap.serverIDs() {
		s := snap.servers[id]
		if s == nil || s.cfg.Instructions != config.InstructionsInclude {
			continue
		}
		conn := s.current()
		if conn == nil || conn.Session() == nil {
			continue
		}
		init := conn.Session().InitializeResult()
		if init == nil || init.Instructions == "" {
			continue
		}
		text, hidden := catalog.Instructions(h.gov.scrub(init.Instructions), h.cfg.Limits.MaxDescription)
		out = append(out, ServerInstructions{Server: id, Text: text, Hidden: hidden})
	}
	return out
}
