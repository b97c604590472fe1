package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/store"
)

// runsDir holds a lock file per run while a process drives it.
func runsDir(state string) string { return filepath.Join(state, "runs") }

// runLock is the agent's Options.Lock: an exclusive lock on the run's file
// in the state directory, held while this process drives it, so that a
// run is never driven by two processes of this machine at once.
func runLock(state string) func(string) (func(), error) {
	return func(id string) (func(), error) {
		if err := os.MkdirAll(runsDir(state), 0o700); err != nil {
			return nil, fmt.Errorf("cannot create %s: %v", runsDir(state), errText(err))
		}
		path := filepath.Join(runsDir(state), id+".lock")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, fmt.Errorf("cannot lock run %s: %v", id, errText(err))
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			pid, _ := io.ReadAll(io.LimitReader(f, 32))
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("run %s is going on in another airlock process (pid %s): wait for it, or stop it", id, strings.TrimSpace(string(pid)))
			}
			return nil, fmt.Errorf("cannot lock run %s: %v", id, err)
		}
		f.Truncate(0)
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
		// The file stays: removing it would let a process that opened it
		// before the removal lock a file nobody else can find.
		return func() {
			f.Truncate(0)
			f.Close() // releases the lock
		}, nil
	}
}

// runLive reports whether a process of this machine drives run id now.
func runLive(state, id string) bool {
	f, err := os.Open(filepath.Join(runsDir(state), id+".lock"))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// runJSON is an element of airlock runs --json: the record, and whether a
// process of this machine drives it now (a running run that none drives
// was interrupted: resume it).
type runJSON struct {
	store.RunRecord
	Live bool `json:"live"`
}

var runsListing = listing[runJSON]{
	key:    "runs",
	none:   "No runs yet: airlock run \"what to do\" starts one.",
	header: []string{"ID", "STATUS", "STEPS", "CALLS", "MODEL", "UPDATED", "PROMPT"},
	row: func(r runJSON) []string {
		status := string(r.Status)
		if r.Status == store.RunRunning && !r.Live {
			status += " (interrupted)"
		}
		return []string{r.ID, status, strconv.Itoa(r.Steps), strconv.Itoa(r.ToolCalls), r.Provider + "/" + r.Model,
			localTime(r.UpdatedAt), oneLine(r.Title, 50)}
	},
}

// runsList is airlock runs: the runs of tenancy's tenant and user, newest
// first.
func (e *env) runsList(cfg *config.Config, runs store.Runs, o *options, _ []string) error {
	who := airlock.ConfigPrincipal(cfg)
	recs, err := runs.RunRecords(e.ctx, store.RunFilter{Tenant: who.Tenant, User: who.User, Limit: o.limit})
	if err != nil {
		return storeError(err)
	}
	state := stateDir(&o.common, cfg)
	out := make([]runJSON, len(recs))
	for i, r := range recs {
		out[i] = runJSON{RunRecord: r, Live: runLive(state, r.ID)}
	}
	return runsListing.print(e.stdout, o.json, out)
}

// runShowJSON is airlock runs show --json: the record, the conversation,
// and the calls of the step in flight.
type runShowJSON struct {
	Run      runJSON           `json:"run"`
	Messages []json.RawMessage `json:"messages"`
	Pending  []json.RawMessage `json:"pending"`
}

// runsShow is airlock runs show RUN_ID: the run's transcript.
func (e *env) runsShow(cfg *config.Config, runs store.Runs, o *options, pos []string) error {
	rec, err := runs.RunRecord(e.ctx, pos[0])
	if errors.Is(err, store.ErrNotFound) {
		return usageError("no run %s: see airlock runs", pos[0])
	}
	if err != nil {
		return storeError(err)
	}
	who := airlock.ConfigPrincipal(cfg)
	if rec.Tenant != who.Tenant || rec.User != who.User {
		return usageError("run %s was made for %s/%s, not for tenancy's %s/%s", rec.ID, rec.Tenant, rec.User, who.Tenant, who.User)
	}
	var cp struct {
		Messages []json.RawMessage `json:"messages"`
		Pending  []json.RawMessage `json:"pending"`
	}
	if len(rec.Checkpoint) > 0 {
		if err := json.Unmarshal(rec.Checkpoint, &cp); err != nil {
			return &exitError{code: exitServer, msg: fmt.Sprintf("run %s: its checkpoint cannot be read: %v", rec.ID, err)}
		}
	}
	live := runLive(stateDir(&o.common, cfg), rec.ID)
	if o.json {
		return writeJSON(e.stdout, runShowJSON{Run: runJSON{rec, live}, Messages: orEmpty(cp.Messages), Pending: orEmpty(cp.Pending)})
	}
	col := coloursFor(e.stdout)
	status := string(rec.Status)
	if rec.Status == store.RunRunning && !live {
		status += " (interrupted: airlock run --resume " + rec.ID + ")"
	}
	fmt.Fprintf(e.stdout, "%s %s, %s/%s, %d steps, %d tool calls, %d+%d tokens, started %s\n", col.bold(rec.ID), status,
		rec.Provider, rec.Model, rec.Steps, rec.ToolCalls, rec.InputTokens, rec.OutputTokens, localTime(rec.CreatedAt))
	if rec.Task != "" {
		fmt.Fprintf(e.stdout, "task %s\n", rec.Task)
	}
	if rec.Error != "" {
		fmt.Fprintf(e.stdout, "error: %s\n", rec.Error)
	}
	for _, raw := range cp.Messages {
		var m struct {
			Role    string `json:"role"`
			Text    string `json:"text"`
			Calls   []struct{ Name, Arguments string }
			Results []struct {
				Name, Status, Text string
			}
		}
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		fmt.Fprintln(e.stdout)
		switch m.Role {
		case "user":
			fmt.Fprintf(e.stdout, "%s\n%s\n", col.bold("user:"), terminalText(m.Text))
		case "assistant":
			fmt.Fprintln(e.stdout, col.bold("assistant:"))
			if m.Text != "" {
				fmt.Fprintln(e.stdout, terminalText(m.Text))
			}
			for _, c := range m.Calls {
				fmt.Fprintf(e.stdout, "  → %s %s\n", printable(c.Name, 200), printable(c.Arguments, 200))
			}
		case "tool":
			for _, r := range m.Results {
				fmt.Fprintf(e.stdout, "  ← %s %s: %s\n", printable(r.Name, 200), r.Status, printable(r.Text, 300))
			}
		}
	}
	waiting := 0
	for _, raw := range cp.Pending {
		var p struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(raw, &p) == nil && p.Result == nil {
			waiting++
		}
	}
	switch {
	case waiting == 1:
		fmt.Fprintf(e.stdout, "\n1 call of the last step has no result yet (airlock run --resume %s)\n", rec.ID)
	case waiting > 1:
		fmt.Fprintf(e.stdout, "\n%d calls of the last step have no result yet (airlock run --resume %s)\n", waiting, rec.ID)
	}
	return nil
}

func orEmpty(v []json.RawMessage) []json.RawMessage {
	if v == nil {
		return []json.RawMessage{}
	}
	return v
}

// inRuns runs a runs command on the store the configuration names.
func inRuns(run func(e *env, cfg *config.Config, runs store.Runs, o *options, pos []string) error) func(*env, *options, []string) error {
	return func(e *env, o *options, pos []string) error {
		cfg, st, err := e.configAndStore(&o.common, e.openStoreOf)
		if err != nil {
			return err
		}
		defer st.Close()
		runs, ok := st.(store.Runs)
		if !ok {
			return usageError("this store keeps no runs")
		}
		return run(e, cfg, runs, o, pos)
	}
}
