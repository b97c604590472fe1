package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/term"

	"github.com/airlockhq/airlock"
)

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colours paints text only on a terminal, and never when NO_COLOR is set.
type colours struct{ on bool }

func coloursFor(w io.Writer) colours {
	return colours{on: isTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"}
}

func (c colours) paint(code, s string) string {
	if !c.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (c colours) green(s string) string { return c.paint("32", s) }
func (c colours) red(s string) string   { return c.paint("31", s) }
func (c colours) dim(s string) string   { return c.paint("2", s) }
func (c colours) bold(s string) string  { return c.paint("1", s) }

func (c colours) status(s string) string {
	switch s {
	case airlock.StatusReady, string(airlock.OK):
		return c.green(s)
	case airlock.StatusFailed:
		return c.red(s)
	case airlock.StatusDegraded, airlock.StatusAuthRequired:
		return c.paint("33", s)
	}
	return s
}

// timeLayout is how a person is shown a time: local, with the zone. JSON
// has RFC 3339 in UTC instead (docs/cli.md, "Times").
const timeLayout = "2006-01-02 15:04:05 MST"

// localTime shows t to a person.
func localTime(t time.Time) string { return t.Local().Format(timeLayout) }

// The JSON shapes below are the CLI's contract (docs/cli.md): add fields,
// never rename or remove them.

type serverJSON struct {
	ID              string  `json:"id"`
	Status          string  `json:"status"`
	ProtocolVersion string  `json:"protocol_version"`
	Error           *string `json:"error"`
}

type statusServerJSON struct {
	ID              string  `json:"id"`
	Status          string  `json:"status"`
	ProtocolVersion string  `json:"protocol_version"`
	Tools           int     `json:"tools"`
	Error           *string `json:"error"`
	LastOK          *string `json:"last_ok"`
	Restarts        int     `json:"restarts"`
}

type toolJSON struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	RemoteName   string          `json:"remote_name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
	Annotations  any             `json:"annotations"`
	Effect       airlock.Effect  `json:"effect"`
	// Flags says what a person should look at: "hidden_characters" when
	// the server's text for the tool had characters nobody would see.
	Flags []string `json:"flags,omitempty"`
	// Hidden counts those characters.
	Hidden int `json:"hidden_characters,omitempty"`
}

type toolsJSON struct {
	Snapshot   string       `json:"snapshot"`
	Generation uint64       `json:"generation"`
	Servers    []serverJSON `json:"servers"`
	Tools      []toolJSON   `json:"tools"`
	// Warnings are configuration entries that name no tool (see
	// airlock.Snapshot.Warnings); [] when there are none.
	Warnings []airlock.Warning `json:"warnings"`
	// Withheld are allowed tools left out because Airlock cannot call
	// them (airlock.Snapshot.Withheld), each with the reason; [] when
	// there are none.
	Withheld []airlock.Withheld `json:"withheld"`
}

type artifactJSON struct {
	ID        string `json:"id"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	Path      string `json:"path"`
}

type callJSON struct {
	Status     string          `json:"status"`
	Content    string          `json:"content"`
	Structured json.RawMessage `json:"structured"`
	Artifacts  []artifactJSON  `json:"artifacts"`
	ApprovalID string          `json:"approval_id,omitempty"`
	RecoveryID string          `json:"recovery_id,omitempty"`
	Snapshot   string          `json:"snapshot"`
	DurationMS int64           `json:"duration_ms"`
	Error      *string         `json:"error"`
	Decision   *decisionJSON   `json:"decision,omitempty"`
	// Inputs are the questions the server asked during the call (a person
	// or a model), each with what it was answered; absent when none.
	Inputs []inputJSON `json:"inputs,omitempty"`
}

type decisionJSON struct {
	Verdict airlock.Verdict `json:"verdict"`
	Rule    string          `json:"rule"`
	Reason  string          `json:"reason"`
}

func errString(e *airlock.Error) *string {
	if e == nil {
		return nil
	}
	s := e.Msg
	return &s
}

func toolsOutput(snap *airlock.Snapshot, servers []airlock.ServerStatus) toolsJSON {
	out := toolsJSON{Snapshot: snap.ID(), Generation: snap.Generation(), Servers: serversOutput(servers), Tools: []toolJSON{},
		Warnings: warningsOutput(snap), Withheld: snap.Withheld()}
	if out.Withheld == nil {
		out.Withheld = []airlock.Withheld{}
	}
	for _, t := range snap.Tools() {
		tj := toolJSON{Name: t.Name, Server: t.Server, RemoteName: t.RemoteName, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Effect: t.Effect}
		if t.OutputSchema == nil {
			tj.OutputSchema = json.RawMessage("null")
		}
		if t.Annotations != nil {
			tj.Annotations = t.Annotations
		}
		if t.Hidden > 0 {
			tj.Flags, tj.Hidden = []string{"hidden_characters"}, t.Hidden
		}
		out.Tools = append(out.Tools, tj)
	}
	return out
}

// warningsOutput is the snapshot's warnings for JSON: never null.
func warningsOutput(snap *airlock.Snapshot) []airlock.Warning {
	if w := snap.Warnings(); len(w) > 0 {
		return w
	}
	return []airlock.Warning{}
}

func statusOutput(servers []airlock.ServerStatus) []statusServerJSON {
	out := []statusServerJSON{}
	for _, s := range servers {
		sj := statusServerJSON{ID: s.ID, Status: s.Status, ProtocolVersion: s.ProtocolVersion, Tools: s.Tools, Error: errString(s.Err), Restarts: s.Restarts}
		if !s.LastOK.IsZero() {
			t := s.LastOK.UTC().Format(time.RFC3339Nano)
			sj.LastOK = &t
		}
		out = append(out, sj)
	}
	return out
}

func callOutput(r *airlock.Result) callJSON {
	out := callJSON{Status: string(r.Status), Content: r.Content, Structured: r.Structured, Artifacts: []artifactJSON{},
		Snapshot: r.Snapshot, DurationMS: r.Duration.Milliseconds(), Error: errString(r.Err),
		ApprovalID: r.ApprovalID, RecoveryID: r.RecoveryID}
	if r.Decision.Verdict != "" {
		out.Decision = &decisionJSON{Verdict: r.Decision.Verdict, Rule: r.Decision.Rule, Reason: r.Decision.Reason}
	}
	if out.Structured == nil {
		out.Structured = json.RawMessage("null")
	}
	for _, a := range r.Artifacts {
		out.Artifacts = append(out.Artifacts, artifactJSON{ID: a.ID, MediaType: a.MediaType, Size: a.Size, Path: a.Path})
	}
	for _, in := range r.Inputs {
		out.Inputs = append(out.Inputs, inputJSON{ID: in.ID, Round: in.Round, Kind: in.Kind, Mode: in.Mode,
			Message: in.Message, Domain: in.Domain, Action: in.Action, Reason: in.Reason})
	}
	return out
}

// inputJSON is one question a server asked during a call, and its answer
// (the "inputs" of a call's JSON).
type inputJSON struct {
	ID      string `json:"id"`
	Round   int    `json:"round"`
	Kind    string `json:"kind"`
	Mode    string `json:"mode,omitempty"`
	Message string `json:"message"`
	Domain  string `json:"domain,omitempty"`
	Action  string `json:"action"`
	Reason  string `json:"reason,omitempty"`
}

// writeJSON writes v as one line.
func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// A listing is how a list command prints its items: {key: [items]} in
// --json mode, else a table with a row per item, or none when there are
// none.
type listing[T any] struct {
	key    string
	none   string
	header []string
	row    func(T) []string
}

// printRead prints items, what a list command read, as print does, or
// the read's error, err.
func (l listing[T]) printRead(e *env, o *options, items []T, err error) error {
	if err != nil {
		return storeError(err)
	}
	return l.print(e.stdout, o.json, items)
}

func (l listing[T]) print(w io.Writer, asJSON bool, items []T) error {
	if items == nil {
		items = []T{}
	}
	if asJSON {
		return writeJSON(w, map[string]any{l.key: items})
	}
	if len(items) == 0 {
		fmt.Fprintln(w, l.none)
		return nil
	}
	rows := [][]string{l.header}
	for _, it := range items {
		rows = append(rows, l.row(it))
	}
	table(w, coloursFor(w), rows)
	return nil
}

// table writes aligned columns; the first row is the header.
func table(w io.Writer, col colours, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], displayWidth(cell))
		}
	}
	for n, r := range rows {
		var b strings.Builder
		for i, cell := range r {
			if i == len(r)-1 {
				b.WriteString(cell)
				break
			}
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(cell)+2))
		}
		line := strings.TrimRight(b.String(), " ")
		if n == 0 {
			line = col.bold(line)
		}
		fmt.Fprintln(w, line)
	}
}

// displayWidth is the width of s without colour codes.
func displayWidth(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case r == '\x1b':
			esc = true
		case esc:
			if r == 'm' {
				esc = false
			}
		default:
			n++
		}
	}
	return n
}

// terminalText is text a server sent, made safe to print as it is: a
// character a terminal would act on (an escape sequence, a bell, a
// carriage return that overwrites the line) or that reorders what is
// shown (a bidirectional override) is written as a Go escape, so that it
// is seen rather than obeyed. Newlines, tabs and CRLF line ends stay.
func terminalText(s string) string {
	safe := func(i int, r rune) bool {
		switch {
		case r == '\n', r == '\t':
			return true
		case r == '\r':
			return strings.HasPrefix(s[i+1:], "\n")
		case 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
			return false
		}
		return !unicode.IsControl(r)
	}
	i := strings.IndexFunc(s, func(r rune) bool { return r < ' ' || r >= 0x7f })
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for j, r := range s[i:] {
		if safe(i+j, r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// oneLine shortens a description for a table cell.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func kindExit(k airlock.Kind) int {
	switch k {
	case airlock.OK:
		return exitOK
	case airlock.InvalidArguments, airlock.ToolError, airlock.UnknownTool, airlock.Denied, airlock.Busy, airlock.ResourceNotFound:
		return exitModel
	case airlock.OutcomeUnknown:
		return exitUnknown
	case airlock.ApprovalRequired:
		return exitApproval
	case airlock.AuthRequired:
		return exitAuth
	case airlock.Cancelled:
		return exitInterrupted
	}
	return exitServer
}
