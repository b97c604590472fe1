package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/auth/oauth"
	"github.com/airlockhq/airlock/config"
	"github.com/airlockhq/airlock/internal/lines"
)

const shellHelp = `commands, one per line:
  tools               the tool catalog of this turn
  status              the servers
  call NAME {json}    run a tool call (arguments default to {})
  resources           the resources and resource templates of this turn
  read URI [SERVER]   read a resource (SERVER: when more than one may serve it)
  prompts             the prompts of this turn
  prompt NAME {json}  get a prompt's messages (arguments default to {})
  complete prompt NAME ARGUMENT [VALUE]
  complete template URI_TEMPLATE ARGUMENT [VALUE [SERVER]]
                      values a server suggests for an argument (VALUE: what is
                      typed so far, "" for nothing; no spaces)
  approve ID          grant an approval request (then call again)
  deny ID             deny an approval request
  turn                end the turn: move to the newest catalog snapshot
  quit                wait for calls in flight and leave
`

// shellDrain is how long the shell's calls in flight may go on after an
// interrupt before they are cancelled (docs/cli.md).
const shellDrain = 10 * time.Second

// maxShellLine bounds one input line: a call's arguments fit many times over.
const maxShellLine = 64 << 20

func (e *env) shell(o *options, _ []string) error {
	// On a terminal, a person is at hand: commands are read with line
	// editing and history, calls that need approval ask right there,
	// reading the answer from the same terminal, and a long call shows its
	// progress, as airlock call does.
	var ed *lineEditor
	var view *progressView
	// A server's question goes to the person: on the terminal, or as an
	// input_request line (each --json call brings its own Elicitor);
	// elsewhere it is declined.
	if !o.json && isTerminal(e.stdout) && isTerminalReader(e.stdin) {
		ed = newLineEditor(e.stdin.(*os.File), e.stdout)
		ta := &terminalApprover{out: e.stdout, ed: ed}
		e.approver = ta
		e.elicit = ta.elicit // a server's questions during a call
		// A remote server that wants more scopes during a call may get
		// them, if the person here agrees and logs in in the browser.
		e.stepUps = airlock.AuthOptions{Open: oauth.Opener(e.stderr, false), Consent: ta.consent}
		view = &progressView{w: e.stdout, tty: true}
		e.callProgress = view.update
	}
	// In --json mode, a change to a resource the shell subscribed to is
	// an event line.
	updates := newResourceUpdates()
	if o.json {
		e.hostOptions = func(_ *config.Config, opts *airlock.Options) error {
			opts.ResourceUpdated = updates.add
			return nil
		}
	}
	tuneGC(os.Getenv) // a long-lived session: see gcPercent
	sess, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(sess)

	// An interrupt (SIGINT, SIGTERM, SIGHUP) stops new calls; the calls in flight
	// get shellDrain to finish, then are cancelled.
	work, cancelWork := context.WithCancel(context.WithoutCancel(e.ctx))
	defer cancelWork()
	defer context.AfterFunc(e.ctx, func() { time.AfterFunc(shellDrain, cancelWork) })()
	sh := &shell{env: e, ctx: work, host: sess, snap: sess.BeginTurn(e.ctx), out: &lines.Writer{W: e.stdout}, col: coloursFor(e.stdout), view: view}
	if ed != nil {
		return sh.edit(ed)
	}
	stop, forwarded := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(forwarded)
		updates.forward(stop, sh.updated)
	}()
	defer func() {
		close(stop)
		<-forwarded
	}()
	lines := readLines(e.stdin)
	for {
		select {
		case <-e.ctx.Done():
			sh.asks.close()
			sh.calls.Close()
			return e.ctx.Err()
		case l, ok := <-lines:
			if l.long {
				sh.tooLong(o.json)
				continue
			}
			if !ok || (l.err == nil && !sh.handle(l.text, o.json)) {
				// No answer can come any more.
				sh.asks.close()
				sh.calls.Close()
				return nil
			}
			if l.err != nil {
				sh.asks.close()
				sh.calls.Close()
				return usageError("shell: reading input: %v", l.err)
			}
		}
	}
}

// shellPrompt is the text shell's prompt on a terminal.
const shellPrompt = "airlock> "

// edit runs the text shell on a terminal, reading each command with ed,
// until quit, the end of the input (Ctrl-D) or an interrupt (Ctrl-C).
func (s *shell) edit(ed *lineEditor) error {
	for {
		text, err := ed.readLine(s.env.ctx, shellPrompt, true) // an interrupt ends the prompt at once
		switch {
		case err == io.EOF:
			return nil
		case errors.Is(err, errInterrupted):
			return context.Canceled
		case err != nil:
			return err
		}
		if !s.handleText(strings.TrimSpace(text)) {
			return nil
		}
	}
}

type line struct {
	text []byte
	long bool // longer than maxShellLine: read to its end and dropped
	err  error
}

// readLines reads stdin on its own goroutine, so that an interrupt is not
// stuck behind a blocking read. A line longer than maxShellLine is passed
// over (long), and the lines after it are read as usual.
func readLines(r io.Reader) <-chan line {
	ch := make(chan line)
	go func() {
		defer close(ch)
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			text, long, err := lines.Read(br, maxShellLine)
			if long {
				ch <- line{long: true}
			} else if text != nil {
				ch <- line{text: text}
			}
			if err != nil {
				if err != io.EOF {
					ch <- line{err: err}
				}
				return
			}
		}
	}()
	return ch
}

type shell struct {
	env   *env
	ctx   context.Context // the calls': see shellDrain
	host  *session
	snap  *airlock.Snapshot // the current turn's snapshot
	out   *lines.Writer
	col   colours
	view  *progressView // a call's progress bar, on a terminal; or nil
	calls workers       // the calls in flight: quit waits for them
	asks  shellAsks     // --json: the questions that wait for an answer command
	subs  shellSubs     // --json: the resources subscribed to
}

// handle runs one input line and reports whether to go on.
func (s *shell) handle(text []byte, jsonMode bool) bool {
	if jsonMode {
		return s.handleJSON(text)
	}
	return s.handleText(strings.TrimSpace(string(text)))
}

// tooLong says that a line longer than maxShellLine was passed over.
func (s *shell) tooLong(jsonMode bool) {
	msg := fmt.Sprintf("a line of more than %d MiB was passed over, unread: a command must fit in one line of at most that", maxShellLine>>20)
	if jsonMode {
		s.reply(nil, map[string]string{"error": msg})
		return
	}
	s.out.Write([]byte(msg + "\n"))
}

func (s *shell) handleText(text string) bool {
	if text == "" || strings.HasPrefix(text, "#") {
		return true
	}
	cmd, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	var b bytes.Buffer
	switch cmd {
	case "quit", "exit":
		return false
	case "help":
		b.WriteString(shellHelp)
	case "tools":
		printTools(&b, s.col, s.snap, s.host.Servers())
	case "status":
		printStatus(&b, s.col, s.host.Servers())
	case "turn":
		s.snap = s.host.BeginTurn(s.ctx)
		fmt.Fprintf(&b, "snapshot %s (generation %d)\n", s.snap.ID(), s.snap.Generation())
	case "approve", "deny":
		if rest == "" {
			fmt.Fprintf(&b, "usage: %s ID\n", cmd)
			break
		}
		if err := s.host.h.Decide(s.ctx, rest, cmd == "approve", whoami(), "from the shell"); err != nil {
			fmt.Fprintf(&b, "%v\n", err)
		} else {
			fmt.Fprintf(&b, "%s: %sd\n", rest, cmd)
		}
	case "call", "prompt":
		name, args, _ := strings.Cut(rest, " ")
		if name == "" {
			fmt.Fprintf(&b, "usage: %s NAME {json}\n", cmd)
			break
		}
		raw := []byte(strings.TrimSpace(args))
		var r *airlock.Result
		var server string
		if cmd == "call" {
			r, server = s.host.h.Call(s.ctx, s.snap, airlock.Call{Name: name, Arguments: raw}), toolServer(s.snap, name)
		} else {
			r, server = s.host.h.GetPrompt(s.ctx, s.snap, airlock.PromptGet{Name: name, Arguments: raw}), promptServer(s.snap, name)
		}
		s.view.finish()
		printResult(&b, &b, r)
		printInputs(&b, server, r)
	case "resources":
		printResources(&b, s.col, s.snap)
	case "prompts":
		printPrompts(&b, s.col, s.snap)
	case "read":
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			b.WriteString("usage: read URI [SERVER]\n")
			break
		}
		r := s.host.h.ReadResource(s.ctx, s.snap, airlock.Read{URI: f[0], Server: field(f, 1)})
		s.view.finish()
		printRead(&b, &b, r)
	case "complete":
		req, ok := textCompletion(strings.Fields(rest))
		if !ok {
			b.WriteString("usage: complete prompt NAME ARGUMENT [VALUE] | complete template URI_TEMPLATE ARGUMENT [VALUE [SERVER]]\n")
			break
		}
		c, err := s.host.h.Complete(s.ctx, s.snap, req)
		printCompletion(&b, &b, c, err)
	default:
		fmt.Fprintf(&b, "unknown command %q; type help\n", cmd)
	}
	s.out.Write(b.Bytes())
	return true
}

// textCompletion is the request of a text complete command's words
// (after "complete"), and whether they make one.
func textCompletion(f []string) (airlock.CompleteRequest, bool) {
	if len(f) < 3 {
		return airlock.CompleteRequest{}, false
	}
	req := airlock.CompleteRequest{Argument: f[2], Value: field(f, 3)}
	if req.Value == `""` {
		req.Value = ""
	}
	switch {
	case f[0] == "prompt" && len(f) <= 4:
		req.Prompt = f[1]
	case f[0] == "template" && len(f) <= 5:
		req.Template, req.Server = f[1], field(f, 4)
	default:
		return req, false
	}
	return req, true
}

// field is f[i], or "" past its end.
func field(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// A shellCommand is one line of --json input.
type shellCommand struct {
	ID   json.RawMessage `json:"id"`
	Cmd  string          `json:"cmd"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	// RequestID, Action and Content are an answer's (asks.go).
	RequestID string          `json:"request_id"`
	Action    string          `json:"action"`
	Content   json.RawMessage `json:"content"`
	// URI and Server are a read's and a subscription's; Prompt, Template,
	// Server, Argument, Value and Context a completion's.
	URI      string          `json:"uri"`
	Server   string          `json:"server"`
	Prompt   string          `json:"prompt"`
	Template string          `json:"template"`
	Argument string          `json:"argument"`
	Value    string          `json:"value"`
	Context  json.RawMessage `json:"context"`
}

func (s *shell) handleJSON(text []byte) bool {
	if len(bytes.TrimSpace(text)) == 0 {
		return true
	}
	var cmd shellCommand
	if err := decodeCommand(text, &cmd); err != nil {
		s.reply(cmd.ID, map[string]string{"error": err.Error()})
		return true
	}
	switch cmd.Cmd {
	case "quit":
		return false
	case "tools":
		s.reply(cmd.ID, toolsOutput(s.snap, s.host.Servers()))
	case "status":
		s.reply(cmd.ID, map[string]any{"servers": statusOutput(s.host.Servers())})
	case "turn":
		s.snap = s.host.BeginTurn(s.ctx)
		s.reply(cmd.ID, map[string]any{"snapshot": s.snap.ID(), "generation": s.snap.Generation()})
	case "approve", "deny":
		// The approval request's id goes in "name".
		if cmd.Name == "" {
			s.reply(cmd.ID, map[string]string{"error": cmd.Cmd + ` needs "name": the approval request's id (apr_…)`})
			return true
		}
		if err := s.host.h.Decide(s.ctx, cmd.Name, cmd.Cmd == "approve", whoami(), "from the shell"); err != nil {
			s.reply(cmd.ID, map[string]string{"error": err.Error()})
			return true
		}
		s.reply(cmd.ID, map[string]string{"approval_id": cmd.Name, "status": map[bool]string{true: "granted", false: "denied"}[cmd.Cmd == "approve"]})
	case "call":
		if cmd.Name == "" {
			s.reply(cmd.ID, map[string]string{"error": `call needs "name"`})
			return true
		}
		s.replyLater(cmd.ID, func(snap *airlock.Snapshot) any {
			return callOutput(s.host.h.Call(s.ctx, snap, airlock.Call{Name: cmd.Name, Arguments: cmd.Args, Elicit: s.elicitFor(cmd.ID)}))
		})
	case "answer":
		s.reply(cmd.ID, s.answerCommand(&cmd))
	case "resources":
		s.reply(cmd.ID, resourcesOutput(s.snap, s.host.Servers()))
	case "prompts":
		s.reply(cmd.ID, promptsOutput(s.snap, s.host.Servers()))
	case "read":
		if cmd.URI == "" {
			s.reply(cmd.ID, map[string]string{"error": `read needs "uri": the resource to read (see the resources command)`})
			return true
		}
		s.replyLater(cmd.ID, func(snap *airlock.Snapshot) any {
			return readOutput(s.host.h.ReadResource(s.ctx, snap, airlock.Read{URI: cmd.URI, Server: cmd.Server}))
		})
	case "prompt":
		if cmd.Name == "" {
			s.reply(cmd.ID, map[string]string{"error": `prompt needs "name": the prompt to get (see the prompts command)`})
			return true
		}
		if err := checkPromptArgs(`"args"`, cmd.Args); err != nil {
			s.reply(cmd.ID, map[string]string{"error": err.Error()})
			return true
		}
		s.replyLater(cmd.ID, func(snap *airlock.Snapshot) any {
			return promptOutput(s.host.h.GetPrompt(s.ctx, snap, airlock.PromptGet{Name: cmd.Name, Arguments: cmd.Args, Elicit: s.elicitFor(cmd.ID)}))
		})
	case "complete":
		req, err := checkCompletion(airlock.CompleteRequest{Prompt: cmd.Prompt, Template: cmd.Template, Server: cmd.Server,
			Argument: cmd.Argument, Value: cmd.Value}, cmd.Context, func(key string) string { return strconv.Quote(key) })
		if err != nil {
			s.reply(cmd.ID, map[string]string{"error": err.Error()})
			return true
		}
		s.replyLater(cmd.ID, func(snap *airlock.Snapshot) any {
			return completionOutput(s.host.h.Complete(s.ctx, snap, req))
		})
	case "subscribe":
		s.reply(cmd.ID, s.subscribe(&cmd))
	case "unsubscribe":
		s.reply(cmd.ID, s.unsubscribe(&cmd))
	default:
		s.reply(cmd.ID, map[string]string{"error": fmt.Sprintf(`unknown cmd %q: use tools, status, call, resources, read, prompts, prompt, `+
			`complete, subscribe, unsubscribe, approve, deny, answer, turn or quit`, cmd.Cmd)})
	}
	return true
}

// decodeCommand decodes a --json line. Its keys are checked strictly: two
// "name" keys must not let one value be shown and another be used. The
// arguments are passed on as raw text, for the pipeline to decode strictly.
func decodeCommand(text []byte, cmd *shellCommand) error {
	fields, err := topLevel(text)
	if err != nil {
		cmd.ID = idOf(text)
		return fmt.Errorf(`not a valid JSON command: %v (want {"id", "cmd", "name", "args"})`, err)
	}
	cmd.ID = fields["id"]
	for key, raw := range fields {
		switch key {
		case "id", "cmd", "name", "request_id", "action", "uri", "server", "prompt", "template", "argument", "value", "context", "args":
		case "content":
			if _, err := topLevel(raw); err != nil && !bytes.Equal(raw, []byte("null")) {
				return fmt.Errorf(`not a valid JSON command: "content" must be a JSON object: %v`, err)
			}
		default:
			return fmt.Errorf(`not a valid JSON command: unknown key %q (want "id", "cmd", "name", "args"; an answer: "request_id", "action", "content"; `+
				`a read: "uri", "server"; a completion: "prompt", "template", "server", "argument", "value", "context")`, key)
		}
	}
	// Every key is one of cmd's own, spelled as its tag is, and there
	// once: Unmarshal, which would match another spelling, fills cmd.
	if err := json.Unmarshal(text, cmd); err != nil {
		if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
			return fmt.Errorf("not a valid JSON command: %q must be a string", te.Field)
		}
		return fmt.Errorf("not a valid JSON command: %v", err)
	}
	for _, raw := range []*json.RawMessage{&cmd.Args, &cmd.Context} {
		if bytes.Equal(*raw, []byte("null")) {
			*raw = nil
		}
	}
	return nil
}

// idOf is the "id" of a line that is not a valid command, where it can be
// told, so that its error goes to the command that has it: the line's
// first JSON value is an object read to its end, with "id" once.
func idOf(text []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil || (key == "id" && id != nil) {
			return nil // unreadable, or "id" twice: neither is the id
		}
		if key == "id" {
			id = value
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil
	}
	return id
}

// topLevel splits a JSON object into its members' raw values, refusing
// duplicate keys.
func topLevel(text []byte) (map[string]json.RawMessage, error) {
	// The common case, a valid object whose keys differ, in one
	// Unmarshal: as many members as the map has keys.
	var fields map[string]json.RawMessage
	if json.Unmarshal(text, &fields) == nil && fields != nil && topLevelMembers(text) == len(fields) {
		return fields, nil
	}
	return topLevelTokens(text)
}

// topLevelMembers counts the members of text, a valid JSON object: the
// colons outside strings at its top level.
func topLevelMembers(text []byte) int {
	n, depth, inString := 0, 0, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++ // what it escapes
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ':' && depth == 1:
			n++
		}
	}
	return n
}

// topLevelTokens is topLevel token by token, saying what is wrong.
func topLevelTokens(text []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("duplicate key %q", key)
		}
		fields[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return fields, nil
}

// replyLater replies to the command id, while the shell reads on, with
// what run returns. run is given the current turn's snapshot as it is
// now: a turn command read meanwhile must not change what a command
// already read runs against. quit waits for it.
func (s *shell) replyLater(id json.RawMessage, run func(snap *airlock.Snapshot) any) {
	snap := s.snap
	s.calls.Go(func() { s.reply(id, run(snap)) })
}

// reply writes v, a JSON object, as one line with "id" first, echoed as it
// was given (or null).
func (s *shell) reply(id json.RawMessage, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	var out bytes.Buffer
	out.WriteString(`{"id":`)
	out.Write(id)
	if len(b) > 2 {
		out.WriteByte(',')
	}
	out.Write(b[1:])
	out.WriteByte('\n')
	s.out.Write(out.Bytes())
}

// isTerminalReader reports whether r is a terminal.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// consent asks the person whether a server may have more scopes than were
// granted (a step-up in the middle of a call); yes starts a login for them.
func (a *terminalApprover) consent(ctx context.Context, req *oauth.StepUp) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	granted := strings.Join(req.Granted, " ")
	if granted == "" {
		granted = "none"
	}
	fmt.Fprintf(a.out, "\nserver %s asks for more scopes: %s (granted now: %s).\n",
		req.Server, strings.Join(req.Added, " "), granted)
	answer, ok, err := a.answer(ctx, fmt.Sprintf("Log in again, in the browser, for %s? [y/N] ", strings.Join(req.Requested, " ")))
	if err != nil || !ok {
		return false, err
	}
	switch strings.ToLower(answer) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
