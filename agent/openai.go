package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/airlockhq/airlock/config"
)

// openAI is the Chat Completions API, OpenAI's own or any server that
// speaks it (vLLM, Ollama, LM Studio, llama.cpp, LiteLLM, OpenRouter).
type openAI struct {
	chat openai.ChatCompletionService
	key  string
	idle time.Duration
}

var _ Provider = (*openAI)(nil)

// openAIDefaultURL is OpenAI's own endpoint.
const openAIDefaultURL = "https://api.openai.com/v1/"

func newOpenAI(o ProviderOptions, hc *http.Client) *openAI {
	base := o.BaseURL
	if base == "" {
		base = openAIDefaultURL
	}
	// The service alone, not openai.NewClient: the client would add what
	// OPENAI_* variables say (another key, an organization, headers).
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithBaseURL(base), option.WithMaxRetries(0)}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	return &openAI{chat: openai.NewChatCompletionService(opts...), key: o.APIKey, idle: idleTimeout(o)}
}

func (p *openAI) Name() string { return config.ProviderOpenAI }

// MaxTools: Chat Completions takes at most 128 tools in a request.
func (p *openAI) MaxTools() int { return 128 }

// Unsupported: OpenAI refuses a parameters schema that combines or
// restricts at its root (oneOf, anyOf, allOf, enum, not), even one whose
// type is object.
func (p *openAI) Unsupported(t ToolSpec) string {
	return rootKeywords(t.Schema, "OpenAI", "oneOf", "anyOf", "allOf", "enum", "not")
}

func (p *openAI) Step(ctx context.Context, req *Request, text func(string)) (*Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	if !req.Stream {
		wctx, idle, stopIdle := watchIdle(ctx, p.idle)
		defer stopIdle()
		res, err := p.chat.New(wctx, params)
		if err != nil {
			if err := idle.err(p.Name()); err != nil {
				return nil, err
			}
			return nil, p.fail(ctx, err)
		}
		if len(res.Choices) == 0 {
			return nil, &ProviderError{Provider: p.Name(), Message: "the answer has no choices"}
		}
		c := res.Choices[0]
		out := &Response{Text: c.Message.Content, Stop: c.FinishReason,
			Usage: Usage{Input: res.Usage.PromptTokens, Output: res.Usage.CompletionTokens}}
		for i, tc := range c.Message.ToolCalls {
			out.Calls = append(out.Calls, ToolCall{ID: callID(tc.ID, i), Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		if out.Text == "" && c.Message.Refusal != "" {
			out.Text = c.Message.Refusal
		}
		return out, nil
	}

	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	sctx, idle, stopIdle := watchIdle(ctx, p.idle)
	defer stopIdle()
	stream := p.chat.NewStreaming(sctx, params)
	defer stream.Close()
	var (
		out    Response
		body   strings.Builder
		calls  []*ToolCall // by the stream's index
		finish string
	)
	for stream.Next() {
		idle.touch()
		chunk := stream.Current()
		if chunk.JSON.Usage.Valid() {
			out.Usage = Usage{Input: chunk.Usage.PromptTokens, Output: chunk.Usage.CompletionTokens}
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		c := chunk.Choices[0]
		if d := c.Delta.Content; d != "" {
			body.WriteString(d)
			if text != nil {
				text(d)
			}
		}
		for _, d := range c.Delta.ToolCalls {
			i := int(d.Index)
			if i < 0 || i >= 1024 {
				return nil, &ProviderError{Provider: p.Name(), Message: fmt.Sprintf("the stream names tool call %d", d.Index)}
			}
			for len(calls) <= i {
				calls = append(calls, &ToolCall{})
			}
			tc := calls[i]
			if d.ID != "" {
				tc.ID = d.ID
			}
			tc.Name += d.Function.Name
			tc.Arguments += d.Function.Arguments
		}
		if c.FinishReason != "" {
			finish = c.FinishReason
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := idle.err(p.Name()); err != nil {
			return nil, err
		}
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return nil, p.fail(ctx, err)
		}
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			return nil, networkError(p.Name(), err) // the request got no answer at all
		}
		return nil, &ProviderError{Provider: p.Name(), Interrupted: true, Err: err,
			Message: "the answer's stream broke off: " + p.scrub(printable(err.Error(), 300))}
	}
	if finish == "" {
		return nil, &ProviderError{Provider: p.Name(), Interrupted: true,
			Message: "the answer's stream ended before the answer was finished"}
	}
	out.Text, out.Stop = body.String(), finish
	for i, tc := range calls {
		tc.ID = callID(tc.ID, i)
		out.Calls = append(out.Calls, *tc)
	}
	return &out, nil
}

// params is req as Chat Completions takes it.
func (p *openAI) params(req *Request) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: req.Model}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Text))
		case RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.Calls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments}}})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case RoleTool:
			// A tool message takes text only: images are named in the
			// text (as artifact references).
			for _, r := range m.Results {
				params.Messages = append(params.Messages, openai.ToolMessage(nonEmpty(r.Text), r.CallID))
			}
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t.Schema)
		if err != nil {
			return params, &ProviderError{Provider: p.Name(), Message: fmt.Sprintf("tool %s: %v", t.Name, err)}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	return params, nil
}

// fail turns an SDK error into a *ProviderError, or ctx's error when the
// caller cancelled.
func (p *openAI) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		return networkError(p.Name(), err)
	}
	msg := apiErr.Message
	if msg == "" {
		msg = apiErr.RawJSON()
	}
	e := &ProviderError{Provider: p.Name(), Status: apiErr.StatusCode, Message: p.scrub(errText(msg, apiErr.StatusCode)), Err: errors.New("provider error")}
	if apiErr.Response != nil {
		e.RetryAfter = retryAfter(apiErr.Response.Header)
	}
	return e
}

// scrub takes the API key out of text that came back from the provider.
func (p *openAI) scrub(s string) string { return scrubKey(s, p.key) }

// callID is the provider's id of the i-th call, or one made up for a
// server that gave none.
func callID(id string, i int) string {
	if id != "" {
		return id
	}
	return fmt.Sprintf("call_%d", i)
}

// nonEmpty is s, or a placeholder: providers refuse an empty tool result.
func nonEmpty(s string) string {
	if s == "" {
		return "(no output)"
	}
	return s
}

// scrubKey replaces key in s.
func scrubKey(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED:api_key]")
}

// rootKeywords says why provider refuses schema, which has one of
// keywords at its root, or "".
func rootKeywords(schema []byte, provider string, keywords ...string) string {
	m, err := schemaMap(schema)
	if err != nil {
		return err.Error()
	}
	var found []string
	for _, k := range keywords {
		if _, ok := m[k]; ok {
			found = append(found, k)
		}
	}
	if len(found) == 0 {
		return ""
	}
	slices.Sort(found)
	return fmt.Sprintf("%s refuses a tool whose input schema has %s at its root", provider, strings.Join(found, ", "))
}
