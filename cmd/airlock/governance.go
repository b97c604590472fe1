package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"
	"strings"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// openStore opens the state directory's store without starting servers.
func (e *env) openStore(c *common) (store.Store, error) {
	cfg, err := e.loadConfig(c)
	if err != nil {
		return nil, err
	}
	st, err := airlock.OpenStore(stateDir(c, cfg))
	if err != nil {
		return nil, usageError("%v", err)
	}
	// Calls left open by a process that died are unknown now; the store
	// knows which writers are still alive.
	if _, err := st.Journal().RecoverOpen(e.ctx, time.Now()); err != nil {
		st.Close()
		return nil, storeError(err)
	}
	return st, nil
}

func whoami() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// storeError maps a store error: unknown ids and settled records are
// usage errors, anything else is a failure to reach the store.
func storeError(err error) error {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
		return usageError("%v", err)
	}
	return &exitError{code: exitServer, msg: err.Error()}
}

func (e *env) approvals(args []string) error {
	if len(args) == 0 {
		return usageError("approvals needs a subcommand: list, show ID, approve ID, or deny ID")
	}
	var (
		c    common
		all  bool
		note string
	)
	sub := args[0]
	fs := flag.NewFlagSet("approvals "+sub, flag.ContinueOnError)
	c.register(fs)
	switch sub {
	case "list":
		fs.BoolVar(&all, "all", false, "every request, not only pending ones")
	case "approve", "deny":
		fs.StringVar(&note, "note", "", "why, for the audit trail")
	case "show":
	default:
		return usageError("unknown approvals subcommand %q: use list, show ID, approve ID, or deny ID", sub)
	}
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return e.help(err, "airlock approvals list [--all] | show ID | approve ID [--note TEXT] | deny ID [--note TEXT]")
	}
	if (sub == "list") != (len(pos) == 0) || len(pos) > 1 {
		return usageError("approvals %s takes %s", sub, map[bool]string{true: "no arguments", false: "exactly one approval id"}[sub == "list"])
	}
	st, err := e.openStore(&c)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "list":
		f := store.ApprovalFilter{Status: store.ApprovalPending}
		if all {
			f.Status = ""
		}
		list, err := st.Approvals().List(e.ctx, f)
		if err != nil {
			return storeError(err)
		}
		if list == nil {
			list = []store.Approval{}
		}
		if c.json {
			return writeJSON(e.stdout, map[string]any{"approvals": list})
		}
		if len(list) == 0 {
			fmt.Fprintln(e.stdout, "No approval requests are pending.")
			return nil
		}
		rows := [][]string{{"ID", "STATUS", "SERVER", "TOOL", "EXPIRES"}}
		for _, a := range list {
			rows = append(rows, []string{a.ID, string(a.Status), a.Server, a.Tool, a.ExpiresAt.Local().Format(time.DateTime)})
		}
		table(e.stdout, coloursFor(e.stdout), rows)
		return nil
	case "show":
		a, err := st.Approvals().Get(e.ctx, pos[0])
		if err != nil {
			return storeError(err)
		}
		if c.json {
			return writeJSON(e.stdout, a)
		}
		fmt.Fprintf(e.stdout, "%s (%s): %s on %s, expires %s\n\n%s\n", a.ID, a.Status, a.Tool, a.Server, a.ExpiresAt.Local().Format(time.DateTime), a.Summary)
		return nil
	}
	grant := sub == "approve"
	if err := airlock.DecideApproval(e.ctx, st, pos[0], grant, whoami(), note); err != nil {
		return storeError(err)
	}
	a, _ := st.Approvals().Get(e.ctx, pos[0])
	if c.json {
		return writeJSON(e.stdout, a)
	}
	if grant {
		fmt.Fprintf(e.stdout, "Approved %s: the same call (%s, same arguments) may now run once, until %s.\n", a.ID, a.Tool, a.ExpiresAt.Local().Format(time.DateTime))
	} else {
		fmt.Fprintf(e.stdout, "Denied %s.\n", a.ID)
	}
	return nil
}

func (e *env) recovery(args []string) error {
	if len(args) == 0 {
		return usageError("recovery needs a subcommand: list, show ID, or resolve ID --outcome applied|not-applied")
	}
	var (
		c             common
		all           bool
		outcome, note string
	)
	sub := args[0]
	fs := flag.NewFlagSet("recovery "+sub, flag.ContinueOnError)
	c.register(fs)
	switch sub {
	case "list":
		fs.BoolVar(&all, "all", false, "every record of the journal, not only unresolved unknown outcomes")
	case "resolve":
		fs.StringVar(&outcome, "outcome", "", "what you found: applied or not-applied")
		fs.StringVar(&note, "note", "", "how you found out, for the audit trail")
	case "show":
	default:
		return usageError("unknown recovery subcommand %q: use list, show ID, or resolve ID", sub)
	}
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return e.help(err, "airlock recovery list [--all] | show ID | resolve ID --outcome applied|not-applied [--note TEXT]")
	}
	if (sub == "list") != (len(pos) == 0) || len(pos) > 1 {
		return usageError("recovery %s takes %s", sub, map[bool]string{true: "no arguments", false: "exactly one record id"}[sub == "list"])
	}
	if sub == "resolve" && !store.Resolution(outcome).Valid() {
		return usageError("recovery resolve needs --outcome applied or --outcome not-applied: check whether the call took effect first")
	}
	st, err := e.openStore(&c)
	if err != nil {
		return err
	}
	defer st.Close()
	switch sub {
	case "list":
		recs, err := st.Journal().Records(e.ctx, store.RecordFilter{All: all})
		if err != nil {
			return storeError(err)
		}
		if recs == nil {
			recs = []store.Record{}
		}
		if c.json {
			return writeJSON(e.stdout, map[string]any{"records": recs})
		}
		if len(recs) == 0 {
			fmt.Fprintln(e.stdout, "No calls have an unknown outcome.")
			return nil
		}
		rows := [][]string{{"ID", "STATUS", "SERVER", "TOOL", "CREATED", "RESOLVED"}}
		for _, r := range recs {
			resolved := "no"
			if r.Resolved {
				resolved = string(r.Resolution)
			}
			rows = append(rows, []string{r.ID, string(r.Status), r.Server, r.Tool, r.CreatedAt.Local().Format(time.DateTime), resolved})
		}
		table(e.stdout, coloursFor(e.stdout), rows)
		return nil
	case "show":
		r, err := st.Journal().Get(e.ctx, pos[0])
		if err != nil {
			return storeError(err)
		}
		if c.json {
			return writeJSON(e.stdout, r)
		}
		printRecord(e.stdout, r)
		return nil
	}
	if err := airlock.ResolveRecovery(e.ctx, st, pos[0], store.Resolution(outcome), note, whoami()); err != nil {
		return storeError(err)
	}
	r, _ := st.Journal().Get(e.ctx, pos[0])
	if c.json {
		return writeJSON(e.stdout, r)
	}
	fmt.Fprintf(e.stdout, "Resolved %s as %s.\n", r.ID, r.Resolution)
	return nil
}

func printRecord(w io.Writer, r store.Record) {
	fmt.Fprintf(w, "%s: %s on %s, %s\n", r.ID, r.Tool, r.Server, r.Status)
	fmt.Fprintf(w, "  effect %s, arguments %s, snapshot %s, sent %s\n", r.Effect, r.ArgsHash, r.Snapshot, r.CreatedAt.Local().Format(time.DateTime))
	if r.Detail != "" {
		fmt.Fprintf(w, "  %s\n", r.Detail)
	}
	if r.Resolved {
		fmt.Fprintf(w, "  resolved as %s by %s: %s\n", r.Resolution, r.ResolvedBy, r.Note)
	} else if r.Status == store.OutcomeUnknown {
		fmt.Fprintf(w, "  check whether it took effect, then: airlock recovery resolve %s --outcome applied|not-applied\n", r.ID)
	}
}

func (e *env) auditCmd(args []string) error {
	var (
		c     common
		since time.Duration
		limit int
	)
	fs := flag.NewFlagSet("audit", flag.ContinueOnError)
	c.register(fs)
	fs.DurationVar(&since, "since", 24*time.Hour, "how far back, such as 30m or 48h")
	fs.IntVar(&limit, "limit", 1000, "at most this many events, the oldest first")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return e.help(err, "airlock audit [--since DUR] [--limit N] [--json]")
	}
	if len(pos) > 0 {
		return usageError("audit takes no arguments")
	}
	if since <= 0 || limit <= 0 {
		return usageError("--since and --limit must be positive")
	}
	st, err := e.openStore(&c)
	if err != nil {
		return err
	}
	defer st.Close()
	events, err := st.Audit().Events(e.ctx, time.Now().Add(-since), limit)
	if err != nil {
		return storeError(err)
	}
	for _, ev := range events {
		if c.json {
			if err := writeJSON(e.stdout, ev); err != nil {
				return err
			}
			continue
		}
		var extra []string
		for _, k := range []string{"decision", "reason", "approval", "recovery", "error"} {
			if v, ok := ev.Fields[k]; ok {
				extra = append(extra, fmt.Sprintf("%s=%v", k, v))
			}
		}
		fmt.Fprintf(e.stdout, "%s %-18s %-10s %-24s %-16s %s\n", ev.Time.Local().Format(time.DateTime), ev.Event, ev.Server, ev.Tool, ev.Class, strings.Join(extra, " "))
	}
	return nil
}
