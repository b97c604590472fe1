package upstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A Recorded is one server in a record file: its id in the configuration
// and its processes.
type Recorded struct {
	Server string `json:"server"`
	ProcessRecord
}

// A recordFile lists the stdio servers one host process runs. Its owner,
// named by pid and start time, tells whether they are still looked after.
type recordFile struct {
	PID     int        `json:"pid"`
	Start   uint64     `json:"start,omitempty"`
	Servers []Recorded `json:"servers"`
}

// WriteRecord records in the file path the stdio servers that this process
// runs, replacing what it held, so that StopRecorded can end them if this
// process dies. The file is written beside path and renamed, so that a
// reader never sees half of it.
func WriteRecord(path string, servers []Recorded) error {
	rec := recordFile{PID: os.Getpid(), Servers: servers}
	if p, err := readProc(rec.PID); err == nil {
		rec.Start = p.start
	}
	if rec.Servers == nil {
		rec.Servers = []Recorded{}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// StopRecorded stops the servers listed in the record files dir/*.json
// whose owner is gone (it died, or its pid now names another process), and
// removes those files, but for one listing a process that survived SIGKILL;
// a file whose owner still runs is left alone. Each recorded server is
// ended only where /proc shows it is still that server (StopLeftover, with
// workdir for records without a marker). It reports how many of the
// servers it found running.
func StopRecorded(dir, workdir string, grace time.Duration) (int, error) {
	paths, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	found := 0
	var errs []error
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var rec recordFile
		if json.Unmarshal(b, &rec) == nil && ownerRuns(rec) {
			continue
		}
		failed := false
		for _, s := range rec.Servers {
			ok, err := StopLeftover(s.ProcessRecord, workdir, grace)
			if ok {
				found++
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("server %s: %v", s.Server, err))
				failed = true
			}
		}
		if !failed {
			os.Remove(path) // else the next one tries again
		}
	}
	return found, errors.Join(errs...)
}

// ownerRuns reports whether the process that wrote rec still runs. A record
// without its owner's start time (written by an older version) cannot tell
// its owner from a process that got its pid later: it counts as gone, as
// it always did.
func ownerRuns(rec recordFile) bool {
	if rec.Start == 0 {
		return false
	}
	p, err := readProc(rec.PID)
	return err == nil && p.start == rec.Start && !p.zombie()
}
