package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/airlockhq/airlock"
)

// The commands of a server's other primitives: resources and their
// templates, prompts, and completions of their arguments. Each works on
// the session's snapshot, as call does, and goes through the same
// pipeline (allowlist, policy, audit).

func (e *env) resources(o *options, _ []string) error {
	return e.reportServers(&o.common, func(s *session, servers []airlock.ServerStatus) any {
		return resourcesOutput(s.Snapshot(), servers)
	}, func(w io.Writer, col colours, s *session, _ []airlock.ServerStatus) {
		printResources(w, col, s.Snapshot())
	})
}

func (e *env) prompts(o *options, _ []string) error {
	return e.reportServers(&o.common, func(s *session, servers []airlock.ServerStatus) any {
		return promptsOutput(s.Snapshot(), servers)
	}, func(w io.Writer, col colours, s *session, _ []airlock.ServerStatus) {
		printPrompts(w, col, s.Snapshot())
	})
}

func (e *env) read(o *options, pos []string) error {
	e.askOnTerminal(o)
	s, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	r := s.h.ReadResource(e.ctx, s.Snapshot(), airlock.Read{URI: pos[0], Server: o.server})
	if o.json {
		if err := writeJSON(e.stdout, readOutput(r)); err != nil {
			return err
		}
	} else {
		printRead(e.stdout, e.stderr, r)
	}
	return exitCode(kindExit(r.Status))
}

func (e *env) prompt(o *options, pos []string) error {
	raw, err := e.readArgs(o.callArgs)
	if err != nil {
		return err
	}
	if err := checkPromptArgs("--args", raw); err != nil {
		return usageError("%v", err)
	}
	e.askOnTerminal(o)
	s, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	r := s.h.GetPrompt(e.ctx, s.Snapshot(), airlock.PromptGet{Name: pos[0], Arguments: raw})
	return e.printOutcome(o, promptOutput(r), r, promptServer(s.Snapshot(), pos[0]))
}

func (e *env) complete(o *options, _ []string) error {
	req, err := checkCompletion(airlock.CompleteRequest{Prompt: o.promptName, Template: o.template, Server: o.server,
		Argument: o.argument, Value: o.value}, []byte(o.context), func(flag string) string { return "--" + flag })
	if err != nil {
		return usageError("%v", err)
	}
	s, err := e.openSession(&o.common)
	if err != nil {
		return err
	}
	defer e.closeSession(s)

	c, cerr := s.h.Complete(e.ctx, s.Snapshot(), req)
	if o.json {
		if err := writeJSON(e.stdout, completionOutput(c, cerr)); err != nil {
			return err
		}
	} else {
		printCompletion(e.stdout, e.stderr, c, cerr)
	}
	if cerr != nil {
		return exitCode(kindExit(cerr.Kind))
	}
	return nil
}

// checkCompletion checks req, and adds to it context, the values of the
// other arguments (a JSON object of strings, or empty); an error says
// what to fix, naming each input as name spells it (--prompt, "prompt").
func checkCompletion(req airlock.CompleteRequest, context []byte, name func(string) string) (airlock.CompleteRequest, error) {
	switch {
	case (req.Prompt == "") == (req.Template == ""):
		return req, fmt.Errorf("complete needs one of %s or %s: the prompt or resource template whose argument to complete",
			name("prompt"), name("template"))
	case req.Prompt != "" && req.Server != "":
		return req, fmt.Errorf("complete: %s goes with %s only: a prompt's name already names its server", name("server"), name("template"))
	case req.Argument == "":
		return req, fmt.Errorf("complete needs %s: the prompt argument or template variable to complete", name("argument"))
	}
	if len(context) > 0 {
		ctx, err := stringObject(name("context"), context)
		if err != nil {
			return req, err
		}
		req.Context = ctx
	}
	return req, nil
}

// checkPromptArgs checks that raw (which may be empty: no arguments) is
// a JSON object: arguments that are not, the person or script at hand
// has to fix, and no server is asked. Its members are checked by the
// pipeline, which records what it refuses.
func checkPromptArgs(what string, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	if _, err := topLevel(raw); err != nil {
		return fmt.Errorf(`%s: %v: give the prompt's arguments as a JSON object of strings, such as {"city": "Paris"} (airlock prompts lists each prompt's arguments)`, what, err)
	}
	return nil
}

// stringObject decodes raw, a JSON object of strings with no key twice,
// such as a completion's context.
func stringObject(what string, raw []byte) (map[string]string, error) {
	const fix = `give the other arguments' values as a JSON object of strings, such as {"department": "Engineering"}`
	fields, err := topLevel(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %s", what, err, fix)
	}
	out := make(map[string]string, len(fields))
	for k, v := range fields {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%s: %q is not a string: %s", what, k, fix)
		}
		out[k] = s
	}
	return out, nil
}

// promptServer is the server of the snapshot's prompt name, or "?".
func promptServer(snap *airlock.Snapshot, name string) string {
	return serverOf(snap.Prompts(), name, func(p airlock.Prompt) (string, string) { return p.Name, p.Server })
}

func printResources(w io.Writer, col colours, snap *airlock.Snapshot) {
	resources, templates := snap.Resources(), snap.ResourceTemplates()
	if len(resources) == 0 && len(templates) == 0 {
		fmt.Fprintln(w, "No resources are exposed: a server exposes those its allowed_resources matches.")
		return
	}
	if len(resources) > 0 {
		rows := [][]string{{"SERVER", "URI", "NAME", "TYPE", "SIZE", "DESCRIPTION"}}
		for _, r := range resources {
			size := "-"
			if r.Size > 0 {
				size = fmt.Sprint(r.Size)
			}
			rows = append(rows, []string{r.Server, r.URI, r.Name, orDash(r.MIMEType), size, oneLine(r.Description, 60)})
		}
		table(w, col, rows)
	}
	if len(templates) > 0 {
		if len(resources) > 0 {
			fmt.Fprintln(w)
		}
		rows := [][]string{{"SERVER", "TEMPLATE", "NAME", "TYPE", "DESCRIPTION"}}
		for _, t := range templates {
			rows = append(rows, []string{t.Server, t.URITemplate, t.Name, orDash(t.MIMEType), oneLine(t.Description, 60)})
		}
		table(w, col, rows)
	}
	fmt.Fprintf(w, "\nSnapshot %s (generation %d), %s, %s.\n", snap.ID(), snap.Generation(),
		plural(len(resources), "resource"), plural(len(templates), "template"))
}

func printPrompts(w io.Writer, col colours, snap *airlock.Snapshot) {
	prompts := snap.Prompts()
	if len(prompts) == 0 {
		fmt.Fprintln(w, "No prompts are exposed: a server exposes those its allowed_prompts names.")
		return
	}
	rows := [][]string{{"PROMPT", "SERVER", "ARGUMENTS", "DESCRIPTION"}}
	for _, p := range prompts {
		args := make([]string, len(p.Arguments))
		for i, a := range p.Arguments {
			args[i] = a.Name
			if !a.Required {
				args[i] = "[" + a.Name + "]"
			}
		}
		rows = append(rows, []string{p.Name, p.Server, orDash(strings.Join(args, " ")), oneLine(p.Description, 60)})
	}
	table(w, col, rows)
	fmt.Fprintf(w, "\nSnapshot %s (generation %d), %s.\n", snap.ID(), snap.Generation(), plural(len(prompts), "prompt"))
}

// printRead prints what a read returned: each text, and a line naming
// the artifact each blob was kept as; a failure goes to stderr.
func printRead(stdout, stderr io.Writer, r *airlock.Result) {
	if r.Status != airlock.OK {
		printResult(stdout, stderr, r)
		return
	}
	for _, c := range r.Contents {
		if c.Artifact != nil {
			fmt.Fprintln(stdout, artifactLine(*c.Artifact))
			continue
		}
		fmt.Fprint(stdout, terminalText(c.Text))
		if !strings.HasSuffix(c.Text, "\n") {
			fmt.Fprintln(stdout)
		}
	}
}

// printCompletion prints the values, one a line, and says on stderr when
// there are more than were sent.
func printCompletion(stdout, stderr io.Writer, c *airlock.Completion, err *airlock.Error) {
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", err.Kind, terminalText(err.Msg))
		return
	}
	for _, v := range c.Values {
		fmt.Fprintln(stdout, terminalText(v))
	}
	if c.HasMore {
		more := "more values"
		if c.Total > len(c.Values) {
			more = plural(c.Total-len(c.Values), "more value")
		}
		fmt.Fprintf(stderr, "airlock: %s: type more of the value to narrow them\n", more)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// The JSON shapes of resources, prompts and completions (docs/cli.md,
// "Resources and prompts"): add fields, never rename or remove them.

type resourceJSON struct {
	Server      string `json:"server"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	MIMEType    string `json:"mime_type"`
	Size        *int64 `json:"size"` // null: the server did not say
}

type templateJSON struct {
	Server      string `json:"server"`
	URITemplate string `json:"uri_template"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	MIMEType    string `json:"mime_type"`
}

type resourcesJSON struct {
	Snapshot   string         `json:"snapshot"`
	Generation uint64         `json:"generation"`
	Servers    []serverJSON   `json:"servers"`
	Resources  []resourceJSON `json:"resources"`
	Templates  []templateJSON `json:"templates"`
}

type promptArgumentJSON struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

type promptJSON struct {
	Name        string               `json:"name"`
	Server      string               `json:"server"`
	RemoteName  string               `json:"remote_name"`
	Title       string               `json:"title,omitempty"`
	Description string               `json:"description"`
	Arguments   []promptArgumentJSON `json:"arguments"`
}

type promptsJSON struct {
	Snapshot   string       `json:"snapshot"`
	Generation uint64       `json:"generation"`
	Servers    []serverJSON `json:"servers"`
	Prompts    []promptJSON `json:"prompts"`
}

// contentJSON is one content of a read: its text, or the artifact a blob
// was kept as (never both, and never the blob's bytes).
type contentJSON struct {
	URI      string        `json:"uri"`
	MIMEType string        `json:"mime_type"`
	Text     *string       `json:"text,omitempty"`
	Artifact *artifactJSON `json:"artifact,omitempty"`
}

// readJSON is a read's outcome: a call's fields, and what it returned.
type readJSON struct {
	callJSON
	Contents []contentJSON `json:"contents"`
}

type messageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// promptResultJSON is a prompt get's outcome: a call's fields, and the
// messages.
type promptResultJSON struct {
	callJSON
	Description string        `json:"description"`
	Messages    []messageJSON `json:"messages"`
}

type completionJSON struct {
	Status  string   `json:"status"`
	Values  []string `json:"values"`
	Total   int      `json:"total"`
	HasMore bool     `json:"has_more"`
	Error   *string  `json:"error"`
}

func serversOutput(servers []airlock.ServerStatus) []serverJSON {
	out := []serverJSON{}
	for _, s := range servers {
		out = append(out, serverJSON{ID: s.ID, Status: s.Status, ProtocolVersion: s.ProtocolVersion, Error: errString(s.Err)})
	}
	return out
}

func resourcesOutput(snap *airlock.Snapshot, servers []airlock.ServerStatus) resourcesJSON {
	out := resourcesJSON{Snapshot: snap.ID(), Generation: snap.Generation(), Servers: serversOutput(servers),
		Resources: []resourceJSON{}, Templates: []templateJSON{}}
	for _, r := range snap.Resources() {
		rj := resourceJSON{Server: r.Server, URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
		if r.Size > 0 {
			rj.Size = &r.Size
		}
		out.Resources = append(out.Resources, rj)
	}
	for _, t := range snap.ResourceTemplates() {
		out.Templates = append(out.Templates, templateJSON{Server: t.Server, URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
			Description: t.Description, MIMEType: t.MIMEType})
	}
	return out
}

func promptsOutput(snap *airlock.Snapshot, servers []airlock.ServerStatus) promptsJSON {
	out := promptsJSON{Snapshot: snap.ID(), Generation: snap.Generation(), Servers: serversOutput(servers), Prompts: []promptJSON{}}
	for _, p := range snap.Prompts() {
		pj := promptJSON{Name: p.Name, Server: p.Server, RemoteName: p.RemoteName, Title: p.Title, Description: p.Description,
			Arguments: []promptArgumentJSON{}}
		for _, a := range p.Arguments {
			pj.Arguments = append(pj.Arguments, promptArgumentJSON{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		out.Prompts = append(out.Prompts, pj)
	}
	return out
}

func readOutput(r *airlock.Result) readJSON {
	out := readJSON{callJSON: callOutput(r), Contents: []contentJSON{}}
	for _, c := range r.Contents {
		cj := contentJSON{URI: c.URI, MIMEType: c.MIMEType}
		if a := c.Artifact; a != nil {
			cj.Artifact = &artifactJSON{ID: a.ID, MediaType: a.MediaType, Size: a.Size, Path: a.Path}
		} else {
			cj.Text = &c.Text
		}
		out.Contents = append(out.Contents, cj)
	}
	return out
}

func promptOutput(r *airlock.Result) promptResultJSON {
	out := promptResultJSON{callJSON: callOutput(r), Description: r.Description, Messages: []messageJSON{}}
	for _, m := range r.Messages {
		out.Messages = append(out.Messages, messageJSON{Role: m.Role, Content: m.Content})
	}
	return out
}

func completionOutput(c *airlock.Completion, err *airlock.Error) completionJSON {
	if err != nil {
		return completionJSON{Status: string(err.Kind), Values: []string{}, Error: errString(err)}
	}
	out := completionJSON{Status: string(airlock.OK), Values: c.Values, Total: c.Total, HasMore: c.HasMore}
	if out.Values == nil {
		out.Values = []string{}
	}
	return out
}
