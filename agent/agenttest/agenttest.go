// Package agenttest is a scripted model provider for tests: an HTTP server
// on loopback that speaks the wire formats of OpenAI's Chat Completions
// and Anthropic's Messages, streaming and not, answers from a script, and
// refuses (as the real APIs do, with a 400) every request that breaks the
// rules of their tool schemas and conversations. Tests of the agent loop
// and of airlock run import it; nothing else does.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Step is one answer of the script.
type Step struct {
	// Text is the model's text; Calls its tool calls, in order.
	Text  string
	Calls []Call
	// Status, when set, answers with this HTTP error instead (with
	// Retry-After when RetryAfter is set, and Message as the provider's
	// error text).
	Status     int
	RetryAfter string
	Message    string
	// CutAfter, when set, cuts the connection of a streamed answer after
	// this many events, as a network failure would.
	CutAfter int
	// Hold never answers: the request waits until the client goes away or
	// the server closes.
	Hold bool
	// Usage is the tokens the answer reports (10 in, 5 out when zero).
	InputTokens, OutputTokens int64
}

// A Call is a tool call of a Step. Args is the arguments' JSON text,
// sent as it is (it may be malformed).
type Call struct {
	ID, Name, Args string
}

// A Request is one request the model server received.
type Request struct {
	// API is "openai" or "anthropic".
	API    string
	Header http.Header
	Raw    []byte
	Body   map[string]any
	Stream bool
}

// A Model is the scripted provider.
type Model struct {
	srv *httptest.Server

	mu       sync.Mutex
	steps    []Step
	requests []Request
	refused  []string // why requests were refused, for the test
	held     chan struct{}
}

// New starts a model server that answers with steps, in order, whichever
// API is asked; past the script it answers 500. It stops when the test
// ends.
func New(t testing.TB, steps ...Step) *Model {
	m := &Model{steps: steps, held: make(chan struct{})}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(func() {
		close(m.held)
		m.srv.CloseClientConnections()
		m.srv.Close()
	})
	return m
}

// OpenAIURL is the base URL to give an OpenAI-compatible client.
func (m *Model) OpenAIURL() string { return m.srv.URL + "/v1" }

// AnthropicURL is the base URL to give an Anthropic client.
func (m *Model) AnthropicURL() string { return m.srv.URL }

// URL is the base URL for api ("openai" or "anthropic").
func (m *Model) URL(api string) string {
	if api == "anthropic" {
		return m.AnthropicURL()
	}
	return m.OpenAIURL()
}

// Add appends steps to the script.
func (m *Model) Add(steps ...Step) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.steps = append(m.steps, steps...)
}

// Requests returns the requests received so far, refused ones included.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Refused says why requests were refused as malformed, one line each.
func (m *Model) Refused() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.refused...)
}

// WaitRequests waits until n requests have arrived, or fails the test.
func (m *Model) WaitRequests(t testing.TB, n int) []Request {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if rs := m.Requests(); len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d requests, want %d", len(m.Requests()), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	var api string
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		api = "openai"
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		api = "anthropic"
	default:
		http.Error(w, "no such endpoint", http.StatusNotFound)
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	req := Request{API: api, Header: r.Header.Clone(), Raw: raw}
	json.Unmarshal(raw, &req.Body)
	req.Stream, _ = req.Body["stream"].(bool)

	check := CheckOpenAI
	if api == "anthropic" {
		check = CheckAnthropic
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	problem := check(raw)
	var step Step
	exhausted := len(m.steps) == 0
	if problem != "" {
		m.refused = append(m.refused, problem)
	} else if !exhausted {
		step, m.steps = m.steps[0], m.steps[1:]
	}
	m.mu.Unlock()

	switch {
	case problem != "":
		writeError(w, api, http.StatusBadRequest, "", problem)
		return
	case exhausted:
		writeError(w, api, http.StatusInternalServerError, "", "the test's script has no more answers")
		return
	case step.Hold:
		select {
		case <-r.Context().Done():
		case <-m.held:
		}
		return
	case step.Status != 0:
		writeError(w, api, step.Status, step.RetryAfter, step.Message)
		return
	}
	if step.InputTokens == 0 && step.OutputTokens == 0 {
		step.InputTokens, step.OutputTokens = 10, 5
	}
	model, _ := req.Body["model"].(string)
	switch {
	case api == "openai" && req.Stream:
		streamOpenAI(w, step, model)
	case api == "openai":
		writeJSON(w, openAIAnswer(step, model))
	case req.Stream:
		streamAnthropic(w, step, model)
	default:
		writeJSON(w, anthropicAnswer(step, model))
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// writeError answers as each API does when it refuses a request.
func writeError(w http.ResponseWriter, api string, status int, retryAfter, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	kind := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		kind = "rate_limit_error"
	case status >= 500:
		kind = "api_error"
	}
	if api == "anthropic" {
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": nil}})
}

// sse writes server-sent events, cutting the connection after cut events
// when cut is set.
type sse struct {
	w     http.ResponseWriter
	n     int
	cut   int
	named bool // Anthropic names its events
}

func newSSE(w http.ResponseWriter, cut int, named bool) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, cut: cut, named: named}
}

func (s *sse) send(v map[string]any) {
	if s.cut > 0 && s.n == s.cut {
		s.w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection goes, mid-answer
	}
	s.n++
	b, _ := json.Marshal(v)
	if s.named {
		fmt.Fprintf(s.w, "event: %s\n", v["type"])
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.w.(http.Flusher).Flush()
}

// pieces splits s into a few pieces, as a stream delivers text.
func pieces(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for len(s) > 0 {
		n := min(len(s), 7)
		for n < len(s) && !isStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func isStart(b byte) bool { return b&0xC0 != 0x80 }

func callID(c Call, i int, prefix string) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("%s%d", prefix, i+1)
}

func openAIAnswer(s Step, model string) map[string]any {
	msg := map[string]any{"role": "assistant", "content": s.Text, "refusal": nil}
	finish := "stop"
	if len(s.Calls) > 0 {
		var calls []any
		for i, c := range s.Calls {
			calls = append(calls, map[string]any{"id": callID(c, i, "call_"), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Args}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
		if s.Text == "" {
			msg["content"] = nil
		}
	}
	return map[string]any{"id": "chatcmpl-test", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish, "logprobs": nil}},
		"usage":   map[string]any{"prompt_tokens": s.InputTokens, "completion_tokens": s.OutputTokens, "total_tokens": s.InputTokens + s.OutputTokens}}
}

func streamOpenAI(w http.ResponseWriter, s Step, model string) {
	out := newSSE(w, s.CutAfter, false)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}}}
	}
	out.send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, p := range pieces(s.Text) {
		out.send(chunk(map[string]any{"content": p}, nil))
	}
	for i, c := range s.Calls {
		out.send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(c, i, "call_"), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, p := range pieces(c.Args) {
			out.send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	finish := "stop"
	if len(s.Calls) > 0 {
		finish = "tool_calls"
	}
	out.send(chunk(map[string]any{}, finish))
	out.send(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": s.InputTokens, "completion_tokens": s.OutputTokens, "total_tokens": s.InputTokens + s.OutputTokens}})
	if s.CutAfter > 0 && out.n == s.CutAfter {
		out.send(nil) // cut before [DONE]
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	w.(http.Flusher).Flush()
}

func anthropicAnswer(s Step, model string) map[string]any {
	var content []any
	if s.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": s.Text})
	}
	stop := "end_turn"
	for i, c := range s.Calls {
		// Arguments that are not a JSON object come as the model's text,
		// a string where the input object belongs: malformed either way.
		var input any
		if err := json.Unmarshal([]byte(c.Args), &input); err != nil {
			input = c.Args
		}
		content = append(content, map[string]any{"type": "tool_use", "id": callID(c, i, "toolu_"), "name": c.Name, "input": input})
		stop = "tool_use"
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{"id": "msg_test", "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": s.InputTokens, "output_tokens": s.OutputTokens}}
}

func streamAnthropic(w http.ResponseWriter, s Step, model string) {
	out := newSSE(w, s.CutAfter, true)
	out.send(map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_test", "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": s.InputTokens, "output_tokens": 1}}})
	index := 0
	if s.Text != "" {
		out.send(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, p := range pieces(s.Text) {
			out.send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}})
		}
		out.send(map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := "end_turn"
	for i, c := range s.Calls {
		out.send(map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": callID(c, i, "toolu_"), "name": c.Name, "input": map[string]any{}}})
		for _, p := range pieces(c.Args) {
			out.send(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		out.send(map[string]any{"type": "content_block_stop", "index": index})
		index++
		stop = "tool_use"
	}
	out.send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": s.OutputTokens}})
	out.send(map[string]any{"type": "message_stop"})
}

// Texts of the tool results a request carries, in order, for tests: the
// tool messages (OpenAI) or tool_result blocks (Anthropic).
func (r Request) ToolResults() []string {
	var out []string
	msgs, _ := r.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		switch r.API {
		case "openai":
			if mm["role"] == "tool" {
				out = append(out, textOf(mm["content"]))
			}
		default:
			blocks, _ := mm["content"].([]any)
			for _, b := range blocks {
				bb, _ := b.(map[string]any)
				if bb["type"] == "tool_result" {
					out = append(out, textOf(bb["content"]))
				}
			}
		}
	}
	return out
}

// ToolNames are the names of the tools the request offers.
func (r Request) ToolNames() []string {
	var out []string
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		tt, _ := t.(map[string]any)
		if f, ok := tt["function"].(map[string]any); ok {
			out = append(out, fmt.Sprint(f["name"]))
		} else {
			out = append(out, fmt.Sprint(tt["name"]))
		}
	}
	return out
}

// ToolSchema is the input schema the request gives tool name, or nil.
func (r Request) ToolSchema(name string) any {
	tools, _ := r.Body["tools"].([]any)
	for _, t := range tools {
		tt, _ := t.(map[string]any)
		if f, ok := tt["function"].(map[string]any); ok && f["name"] == name {
			return f["parameters"]
		}
		if tt["name"] == name {
			return tt["input_schema"]
		}
	}
	return nil
}

// textOf is the text of a message's content: a string, or text blocks.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if bb, ok := b.(map[string]any); ok && bb["type"] == "text" {
				parts = append(parts, fmt.Sprint(bb["text"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
