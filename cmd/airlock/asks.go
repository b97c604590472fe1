package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock"
)

// A server may ask a person something during a call (an elicitation, or a
// sampling request its sampling: ask puts to a person). On a terminal the
// person is asked there (terminalApprover.elicit); in airlock shell --json
// the question is an input_request line and the answer an answer command
// (shell.elicitFor); anywhere else nobody is asked and the host declines.

// declineAll is the Elicitor where nobody can be asked: the host declares
// elicitation to servers, so that a server's question reaches the host
// and the call's result says what was asked, and declines it.
func declineAll(context.Context, *airlock.InputRequest) (*airlock.InputAnswer, error) {
	return &airlock.InputAnswer{Action: airlock.AnswerDecline, Reason: "no terminal to ask a person on"}, nil
}

// maxAnswerWait bounds --answer-wait.
const maxAnswerWait = 24 * time.Hour

// answerElsewhere is the Elicitor where nobody is at a terminal but a
// person may answer in the console (--answer-wait d): the host keeps a
// form or a link in the store while it is asked, and takes the console's
// answer as soon as it is given; nobody answering within d declines it.
// Sampling, which the console does not show, is declined at once.
func answerElsewhere(out io.Writer, d time.Duration) airlock.Elicitor {
	return func(ctx context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
		if req.Kind != airlock.InputElicitation {
			return declineAll(ctx, req)
		}
		fmt.Fprintf(out, "airlock: server %s asks a person during %s; answer it in the console (airlock console, the inputs page) within %s\n", req.Server, req.Tool, d)
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), airlock.ErrAnsweredElsewhere) {
				fmt.Fprintln(out, "airlock: answered in the console")
			}
			return nil, context.Cause(ctx)
		case <-t.C:
			fmt.Fprintf(out, "airlock: nobody answered in the console within %s: the question is declined\n", d)
			return &airlock.InputAnswer{Action: airlock.AnswerDecline, Reason: fmt.Sprintf("nobody answered in the console within %s (--answer-wait)", d)}, nil
		}
	}
}

// elicit asks the person at the terminal a server's question: a form,
// field by field with the server's defaults and choices; a link, shown
// with its domain and never opened; or a sampling request, shown whole.
func (a *terminalApprover) elicit(ctx context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() {
		if errors.Is(context.Cause(ctx), airlock.ErrAnsweredElsewhere) {
			fmt.Fprintln(a.out, "\n(answered elsewhere, in the console)")
		}
	}()
	who := fmt.Sprintf("server %s, during %s", req.Server, req.Tool)
	if req.Round > 1 {
		who += fmt.Sprintf(" (question %d of this call)", req.Round)
	}
	if req.Problem != "" {
		fmt.Fprintf(a.out, "\nThat answer does not fit: %s\n", printable(req.Problem, 500))
	}
	switch {
	case req.Kind == airlock.InputSampling:
		return a.askSampling(ctx, who, req)
	case req.Mode == airlock.ElicitURL:
		fmt.Fprintf(a.out, "\n%s asks you to open a link:\n  %s\n  %s\n  (domain %s)\n",
			who, printable(req.Message, 2000), printable(req.URL, 2000), printable(req.Domain, 255))
		fmt.Fprintln(a.out, "Airlock does not open it. Open it yourself only if you trust that domain.")
		return a.choose(ctx, "Accept (you open it and finish there)? [y = accept, n = decline, c = cancel] ")
	}
	fmt.Fprintf(a.out, "\n%s asks:\n  %s\n", who, printable(req.Message, 2000))
	f, err := airlock.FormFields(req.Schema)
	if err != nil {
		fmt.Fprintf(a.out, "The form cannot be shown (%v): declined.\n", err)
		return &airlock.InputAnswer{Action: airlock.AnswerDecline, Reason: "the form cannot be shown: " + err.Error()}, nil
	}
	question := "Answer? [y = fill in the form, n = decline, c = cancel] "
	if len(f) == 0 {
		question = "Answer? [y = accept, n = decline, c = cancel] "
	}
	ans, err := a.choose(ctx, question)
	if err != nil || ans.Action != airlock.AnswerAccept {
		return ans, err
	}
	content := map[string]any{}
	for _, fld := range f {
		v, set, err := a.askField(ctx, fld)
		if err != nil {
			return nil, err
		}
		if set {
			content[fld.Name] = v
		}
	}
	ans.Content = content
	return ans, nil
}

// choose reads accept, decline or cancel; no answer (the end of the
// input) declines.
func (a *terminalApprover) choose(ctx context.Context, question string) (*airlock.InputAnswer, error) {
	for {
		text, ok, err := a.answer(ctx, question)
		if err != nil {
			return nil, err
		}
		if !ok {
			return &airlock.InputAnswer{Action: airlock.AnswerDecline, Reason: "the terminal's input ended before an answer came"}, nil
		}
		switch strings.ToLower(text) {
		case "y", "yes", "accept":
			return &airlock.InputAnswer{Action: airlock.AnswerAccept}, nil
		case "n", "no", "decline", "":
			return &airlock.InputAnswer{Action: airlock.AnswerDecline}, nil
		case "c", "cancel":
			return &airlock.InputAnswer{Action: airlock.AnswerCancel}, nil
		}
		fmt.Fprintln(a.out, "Answer y, n or c.")
	}
}

// askSampling shows what a server wants a model to be asked, and asks
// whether it may.
func (a *terminalApprover) askSampling(ctx context.Context, who string, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
	fmt.Fprintf(a.out, "\n%s wants a model to answer this:\n", who)
	if s := req.Sampling; s != nil {
		if s.SystemPrompt != "" {
			fmt.Fprintf(a.out, "  system: %s\n", printable(s.SystemPrompt, 2000))
		}
		for _, m := range s.Messages {
			fmt.Fprintf(a.out, "  %s: %s\n", printable(m.Role, 20), printable(m.Text, 2000))
		}
		fmt.Fprintf(a.out, "  (at most %d tokens)\n", s.MaxTokens)
	}
	text, ok, err := a.answer(ctx, "Let it? [y/N] ")
	if err != nil {
		return nil, err
	}
	if ok && (strings.EqualFold(text, "y") || strings.EqualFold(text, "yes")) {
		return &airlock.InputAnswer{Action: airlock.AnswerAccept}, nil
	}
	return &airlock.InputAnswer{Action: airlock.AnswerDecline}, nil
}

// askField reads one field of a form until the answer has the field's
// type: set is false when the field is left out (it is optional, or its
// default is taken by the host).
func (a *terminalApprover) askField(ctx context.Context, f airlock.FormField) (v any, set bool, err error) {
	label := f.Name
	if f.Title != "" && f.Title != f.Name {
		label += " (" + printable(f.Title, 100) + ")"
	}
	if f.Description != "" {
		label += ": " + printable(f.Description, 300)
	}
	fmt.Fprintf(a.out, "  %s\n", label)
	for i, c := range f.Choices {
		line := c.Value
		if c.Title != "" && c.Title != c.Value {
			line += " — " + c.Title
		}
		fmt.Fprintf(a.out, "    %d) %s\n", i+1, printable(line, 200))
	}
	prompt := "  " + f.Name
	switch {
	case f.Multi:
		prompt += " (numbers or values, comma-separated)"
	case len(f.Choices) > 0:
		prompt += " (number or value)"
	case f.Kind == "boolean":
		prompt += " (y/n)"
	case f.Kind == "number", f.Kind == "integer":
		prompt += " (" + f.Kind + ")"
	}
	if f.HasDefault {
		d, _ := json.Marshal(f.Default)
		prompt += " [" + printable(string(d), 100) + "]"
	} else if !f.Required {
		prompt += " [leave empty to skip]"
	}
	prompt += ": "
	for {
		text, ok, err := a.answer(ctx, prompt)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, io.ErrUnexpectedEOF
		}
		if text == "" {
			if f.HasDefault {
				return f.Default, true, nil
			}
			if !f.Required {
				return nil, false, nil
			}
			fmt.Fprintln(a.out, "  This field is required.")
			continue
		}
		v, err := f.Parse(text)
		if err != nil {
			fmt.Fprintf(a.out, "  %v\n", err)
			continue
		}
		return v, true, nil
	}
}

// inputRequestJSON is an input_request line of airlock shell --json
// (docs/cli.md): the contract's shape, only ever added to.
type inputRequestJSON struct {
	Event     string          `json:"event"` // "input_request"
	RequestID string          `json:"request_id"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Kind      string          `json:"kind"`
	Mode      string          `json:"mode,omitempty"`
	Message   string          `json:"message"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	URL       string          `json:"url,omitempty"`
	Domain    string          `json:"domain,omitempty"`
	Round     int             `json:"round"`
	// Problem says why the last answer to this question was refused.
	Problem  string        `json:"problem,omitempty"`
	Sampling *samplingJSON `json:"sampling,omitempty"`
}

type samplingJSON struct {
	SystemPrompt string                `json:"system_prompt,omitempty"`
	Messages     []samplingMessageJSON `json:"messages"`
	MaxTokens    int64                 `json:"max_tokens"`
}

type samplingMessageJSON struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

func inputRequestOutput(req *airlock.InputRequest) inputRequestJSON {
	out := inputRequestJSON{Event: "input_request", RequestID: req.ID, Server: req.Server, Tool: req.Tool, Kind: req.Kind,
		Mode: req.Mode, Message: req.Message, Schema: req.Schema, URL: req.URL, Domain: req.Domain, Round: req.Round, Problem: req.Problem}
	if s := req.Sampling; s != nil {
		out.Sampling = &samplingJSON{SystemPrompt: s.SystemPrompt, Messages: []samplingMessageJSON{}, MaxTokens: s.MaxTokens}
		for _, m := range s.Messages {
			out.Sampling.Messages = append(out.Sampling.Messages, samplingMessageJSON{Role: m.Role, Text: m.Text})
		}
	}
	return out
}

// shellAsks are the questions of airlock shell --json's calls that wait
// for an answer command, by request id. Once the input has ended
// (closed), nobody can answer: what waits and what comes is declined.
type shellAsks struct {
	mu      sync.Mutex
	waiting map[string]*shellAsk
	closed  bool
}

type shellAsk struct {
	req    *airlock.InputRequest
	answer chan *airlock.InputAnswer // buffered: one answer
}

// elicitFor returns the Elicitor of the call the command with id callID
// made: each question is an input_request line with the call's id, and
// waits for its answer command.
func (s *shell) elicitFor(callID json.RawMessage) airlock.Elicitor {
	return func(ctx context.Context, req *airlock.InputRequest) (*airlock.InputAnswer, error) {
		a := &shellAsk{req: req, answer: make(chan *airlock.InputAnswer, 1)}
		s.asks.mu.Lock()
		if s.asks.closed {
			s.asks.mu.Unlock()
			return &airlock.InputAnswer{Action: airlock.AnswerDecline, Reason: shellEnded}, nil
		}
		if s.asks.waiting == nil {
			s.asks.waiting = map[string]*shellAsk{}
		}
		s.asks.waiting[req.ID] = a
		s.asks.mu.Unlock()
		defer func() {
			s.asks.mu.Lock()
			delete(s.asks.waiting, req.ID)
			s.asks.mu.Unlock()
		}()
		s.reply(callID, inputRequestOutput(req))
		select {
		case ans := <-a.answer:
			return ans, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// answerCommand answers an input request: it says what to fix when the
// request is unknown or the answer does not fit, and otherwise hands the
// answer to the call that waits for it.
func (s *shell) answerCommand(cmd *shellCommand) any {
	if cmd.RequestID == "" {
		return map[string]string{"error": `answer needs "request_id": the request_id of the input_request line it answers`}
	}
	ans := &airlock.InputAnswer{Action: cmd.Action}
	switch cmd.Action {
	case airlock.AnswerAccept, airlock.AnswerDecline, airlock.AnswerCancel:
	default:
		return map[string]string{"error": fmt.Sprintf(`answer: "action" is %q: use accept, decline or cancel`, cmd.Action)}
	}
	if len(cmd.Content) > 0 && !bytes.Equal(cmd.Content, []byte("null")) {
		if cmd.Action != airlock.AnswerAccept {
			return map[string]string{"error": `answer: "content" goes only with "action": "accept"`}
		}
		if err := json.Unmarshal(cmd.Content, &ans.Content); err != nil || ans.Content == nil {
			return map[string]string{"error": `answer: "content" must be a JSON object of the form's fields`}
		}
	}
	s.asks.mu.Lock()
	defer s.asks.mu.Unlock()
	a := s.asks.waiting[cmd.RequestID]
	if a == nil {
		return map[string]string{"error": fmt.Sprintf("answer: no input request %q is waiting: it was answered already, its call ended, or the id is wrong", clipText(cmd.RequestID))}
	}
	if err := checkAnswer(a.req, ans); err != nil {
		return map[string]string{"error": "answer: " + err.Error() + "; answer again"}
	}
	delete(s.asks.waiting, cmd.RequestID)
	a.answer <- ans
	return map[string]bool{"ok": true}
}

// shellEnded is why a question of airlock shell --json is declined once
// its input has ended.
const shellEnded = "the shell's input ended before an answer came"

// close declines every question that waits, and every one to come: the
// input has ended, so nobody can answer.
func (a *shellAsks) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for id, w := range a.waiting {
		w.answer <- &airlock.InputAnswer{Action: airlock.AnswerDecline, Reason: shellEnded}
		delete(a.waiting, id)
	}
}

// clipText bounds text a client chose before it is echoed.
func clipText(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	return s
}

// checkAnswer checks an answer against its request before the host does,
// so that the person hears at once what to fix.
func checkAnswer(req *airlock.InputRequest, ans *airlock.InputAnswer) error {
	return req.Check(ans)
}
