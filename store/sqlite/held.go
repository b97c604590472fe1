package sqlite

import (
	"path/filepath"
	"sync"
)

// The outcomes a DB holds (committer.hold) must be seen by every read of
// the journal made after their End, on any DB of the file in this process
// too: a read flushes the held outcomes of every committer on its file
// first (flushHeld). Another process reads them within holdFor.
var filesHeld = struct {
	sync.Mutex
	by map[string]map[*committer]struct{} // the committers of each file, by its absolute path
}{by: map[string]map[*committer]struct{}{}}

// fileKey is the key of path in filesHeld.
func fileKey(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// register adds db's committer to those of its file.
func (db *DB) register() {
	filesHeld.Lock()
	defer filesHeld.Unlock()
	k := fileKey(db.path)
	if filesHeld.by[k] == nil {
		filesHeld.by[k] = map[*committer]struct{}{}
	}
	filesHeld.by[k][&db.group] = struct{}{}
}

// unregister removes db's committer, once it has flushed what it held.
func (db *DB) unregister() {
	filesHeld.Lock()
	defer filesHeld.Unlock()
	k := fileKey(db.path)
	delete(filesHeld.by[k], &db.group)
	if len(filesHeld.by[k]) == 0 {
		delete(filesHeld.by, k)
	}
}

// flushHeld commits the outcomes that any DB of db's file in this process
// holds: what a read of the journal does first.
func (db *DB) flushHeld() {
	filesHeld.Lock()
	cs := make([]*committer, 0, len(filesHeld.by[fileKey(db.path)]))
	for c := range filesHeld.by[fileKey(db.path)] {
		cs = append(cs, c)
	}
	filesHeld.Unlock()
	for _, c := range cs {
		c.flushHeld()
	}
}

// An openSet is the intents a DB began and has not ended. Nothing else
// ends those first: RecoverOpen ends only a dead writer's, and Resolve
// and LateAnswer apply to unknown outcomes only. So their End may be
// held, its caller not waiting for the commit: it cannot fail for being
// ended already.
type openSet struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func (s *openSet) add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]struct{}{}
	}
	s.ids[id] = struct{}{}
}

// take removes id and reports whether it was there.
func (s *openSet) take(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[id]
	delete(s.ids, id)
	return ok
}
