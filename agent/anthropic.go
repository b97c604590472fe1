package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/airlockhq/airlock/config"
)

// anthropicAPI is Anthropic's Messages API.
type anthropicAPI struct {
	messages anthropic.MessageService
	key      string
	idle     time.Duration
}

var _ Provider = (*anthropicAPI)(nil)

// DefaultMaxTokens is the max_tokens of a Messages request when the run
// names none: the API requires one.
const DefaultMaxTokens = 8192

// maxImageBytes is the largest image a tool result carries to the
// Messages API (its limit is 5 MB of image; larger ones are named only).
const maxImageBytes = 5 << 20

func newAnthropic(o ProviderOptions, hc *http.Client) *anthropicAPI {
	// The service alone, not anthropic.NewClient: the client would read
	// ANTHROPIC_* variables and profile files for a key of its own.
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithEnvironmentProduction(), option.WithMaxRetries(0)}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(o.BaseURL))
	}
	if o.APIKey != "" {
		opts = append(opts, option.WithAPIKey(o.APIKey))
	}
	return &anthropicAPI{messages: anthropic.NewMessageService(opts...), key: o.APIKey, idle: idleTimeout(o)}
}

func (p *anthropicAPI) Name() string { return config.ProviderAnthropic }

func (p *anthropicAPI) MaxTools() int { return 0 }

// Unsupported: the Messages API refuses an input schema with oneOf, anyOf
// or allOf at its root.
func (p *anthropicAPI) Unsupported(t ToolSpec) string {
	return rootKeywords(t.Schema, "Anthropic", "oneOf", "anyOf", "allOf")
}

func (p *anthropicAPI) Step(ctx context.Context, req *Request, text func(string)) (*Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	if !req.Stream {
		wctx, idle, stopIdle := watchIdle(ctx, p.idle)
		defer stopIdle()
		res, err := p.messages.New(wctx, params)
		if err != nil {
			if err := idle.err(p.Name()); err != nil {
				return nil, err
			}
			return nil, p.fail(ctx, err)
		}
		out := &Response{Stop: string(res.StopReason), Usage: Usage{Input: res.Usage.InputTokens, Output: res.Usage.OutputTokens}}
		var body strings.Builder
		for _, b := range res.Content {
			switch b.Type {
			case "text":
				body.WriteString(b.Text)
			case "tool_use":
				out.Calls = append(out.Calls, ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
			}
		}
		out.Text = body.String()
		return out, nil
	}

	sctx, idle, stopIdle := watchIdle(ctx, p.idle)
	defer stopIdle()
	stream := p.messages.NewStreaming(sctx, params)
	defer stream.Close()
	// The blocks are put together here, from the events, rather than by
	// the SDK's Message.Accumulate, which replaces a tool call's input
	// that is not JSON by {}: a malformed call must reach the pipeline as
	// the model wrote it, and be refused there.
	type block struct {
		kind     string
		text     strings.Builder
		id, name string
		input    strings.Builder
		started  bool // input_json_delta seen: input is the deltas, not the start's
	}
	var (
		out     Response
		blocks  []*block
		stopped bool
	)
	for stream.Next() {
		idle.touch()
		ev := stream.Current()
		switch ev.Type {
		case "message_start":
			out.Usage.Input = ev.Message.Usage.InputTokens
			out.Usage.Output = ev.Message.Usage.OutputTokens
		case "content_block_start":
			if ev.Index != int64(len(blocks)) {
				return nil, &ProviderError{Provider: p.Name(), Message: fmt.Sprintf("the stream started block %d after %d blocks", ev.Index, len(blocks))}
			}
			cb := ev.ContentBlock
			b := &block{kind: cb.Type, id: cb.ID, name: cb.Name}
			if cb.Type == "text" && cb.Text != "" {
				b.text.WriteString(cb.Text)
				if text != nil {
					text(cb.Text)
				}
			}
			if cb.Type == "tool_use" {
				b.input.WriteString(cb.JSON.Input.Raw())
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			if ev.Index < 0 || ev.Index >= int64(len(blocks)) {
				return nil, &ProviderError{Provider: p.Name(), Message: fmt.Sprintf("the stream sent a delta of block %d, which it did not start", ev.Index)}
			}
			b := blocks[ev.Index]
			switch ev.Delta.Type {
			case "text_delta":
				b.text.WriteString(ev.Delta.Text)
				if text != nil && ev.Delta.Text != "" {
					text(ev.Delta.Text)
				}
			case "input_json_delta":
				if !b.started {
					b.input.Reset()
					b.started = true
				}
				b.input.WriteString(ev.Delta.PartialJSON)
			}
		case "message_delta":
			out.Stop = string(ev.Delta.StopReason)
			out.Usage.Output = ev.Usage.OutputTokens
			if ev.Usage.InputTokens > 0 {
				out.Usage.Input = ev.Usage.InputTokens
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err := idle.err(p.Name()); err != nil {
			return nil, err
		}
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			return nil, p.fail(ctx, err)
		}
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			return nil, networkError(p.Name(), err) // the request got no answer at all
		}
		return nil, &ProviderError{Provider: p.Name(), Interrupted: true, Err: err,
			Message: "the answer's stream broke off: " + scrubKey(printable(err.Error(), 300), p.key)}
	}
	if !stopped {
		return nil, &ProviderError{Provider: p.Name(), Interrupted: true,
			Message: "the answer's stream ended before the answer was finished (no message_stop)"}
	}
	var body strings.Builder
	for _, b := range blocks {
		switch b.kind {
		case "text":
			body.WriteString(b.text.String())
		case "tool_use":
			args := b.input.String()
			if args == "" {
				args = "{}"
			}
			out.Calls = append(out.Calls, ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	out.Text = body.String()
	return &out, nil
}

// params is req as the Messages API takes it.
func (p *anthropicAPI) params(req *Request) (anthropic.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(req.Model), MaxTokens: int64(maxTokens)}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Text)))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.Calls {
				// A call's input must be a JSON object here; the model's
				// own text of one that is not was refused by the pipeline,
				// and its result says so.
				var input any = json.RawMessage(c.Arguments)
				if !jsonObject(c.Arguments) {
					input = map[string]any{}
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		case RoleTool:
			var blocks []anthropic.ContentBlockParamUnion
			for _, r := range m.Results {
				blocks = append(blocks, toolResultBlock(r))
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		}
	}
	for _, t := range req.Tools {
		schema, err := schemaMap(t.Schema)
		if err != nil {
			return params, &ProviderError{Provider: p.Name(), Message: fmt.Sprintf("tool %s: %v", t.Name, err)}
		}
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type":
				// always "object": the catalog refuses any other root
			case "properties":
				in.Properties = v
			case "required":
				if err := json.Unmarshal(v.(json.RawMessage), &in.Required); err != nil {
					in.ExtraFields[k] = v
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params, nil
}

// toolResultBlock is r as a tool_result block: its text, and the images
// the Messages API takes.
func toolResultBlock(r ToolResult) anthropic.ContentBlockParamUnion {
	block := anthropic.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.IsError {
		block.IsError = anthropic.Bool(true)
	}
	block.Content = append(block.Content, anthropic.ToolResultBlockParamContentUnion{
		OfText: &anthropic.TextBlockParam{Text: nonEmpty(r.Text)}})
	for _, img := range r.Images {
		if !imageTypes[img.MediaType] || img.Size > maxImageBytes {
			continue
		}
		data, err := os.ReadFile(img.Path)
		if err != nil || len(data) > maxImageBytes {
			continue // the text names it
		}
		block.Content = append(block.Content, anthropic.ToolResultBlockParamContentUnion{
			OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
				OfBase64: &anthropic.Base64ImageSourceParam{MediaType: anthropic.Base64ImageSourceMediaType(img.MediaType),
					Data: base64.StdEncoding.EncodeToString(data)}}}})
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &block}
}

// imageTypes are the media types of the images the Messages API takes.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

func (p *anthropicAPI) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		return networkError(p.Name(), err)
	}
	msg := apiErr.Message
	if msg == "" {
		msg = apiErr.RawJSON()
	}
	e := &ProviderError{Provider: p.Name(), Status: apiErr.StatusCode, Message: scrubKey(errText(msg, apiErr.StatusCode), p.key), Err: errors.New("provider error")}
	if apiErr.Response != nil {
		e.RetryAfter = retryAfter(apiErr.Response.Header)
	}
	return e
}

// jsonObject reports whether s is one JSON object.
func jsonObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}
