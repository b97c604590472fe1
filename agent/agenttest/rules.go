package agenttest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The rules below are those the providers' APIs enforce on a request's
// tools and conversation, as their documentation and error messages state
// them; a request that breaks one is refused with a 400, as it would be.

var (
	openAIName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	anthropicName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)
)

// CheckOpenAI says what is wrong with a Chat Completions request body, or
// "" when nothing is.
func CheckOpenAI(raw []byte) string {
	var body struct {
		Model    string            `json:"model"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Type     string `json:"type"`
			Function *struct {
				Name        string          `json:"name"`
				Description *string         `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Stream        *bool           `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return "the body is not a JSON object: " + err.Error()
	}
	if body.Model == "" {
		return "model is required"
	}
	if len(body.Messages) == 0 {
		return "messages must not be empty"
	}
	if len(body.Tools) > 128 {
		return fmt.Sprintf("tools: %d tools, more than 128", len(body.Tools))
	}
	if len(body.StreamOptions) > 0 && (body.Stream == nil || !*body.Stream) {
		return "stream_options is only allowed when stream is true"
	}
	seen := map[string]bool{}
	for i, t := range body.Tools {
		if t.Type != "function" || t.Function == nil {
			return fmt.Sprintf("tools[%d]: type must be function, with a function", i)
		}
		f := t.Function
		if !openAIName.MatchString(f.Name) {
			return fmt.Sprintf("tools[%d].function.name %q must match %s", i, f.Name, openAIName)
		}
		if seen[f.Name] {
			return fmt.Sprintf("tools[%d]: the function name %q is given twice", i, f.Name)
		}
		seen[f.Name] = true
		if len(f.Parameters) > 0 {
			if msg := rootSchema(f.Parameters, "oneOf", "anyOf", "allOf", "enum", "not"); msg != "" {
				return fmt.Sprintf("Invalid schema for function '%s': %s", f.Name, msg)
			}
		}
	}
	// Every assistant tool call is answered by a tool message, before the
	// next assistant or user message; every tool message answers one.
	open := map[string]bool{}
	for i, rm := range body.Messages {
		var m struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string  `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(rm, &m); err != nil {
			return fmt.Sprintf("messages[%d] is not an object", i)
		}
		switch m.Role {
		case "system", "developer", "user":
			if len(open) > 0 {
				return fmt.Sprintf("messages[%d]: tool calls %v were not answered by tool messages", i, keys(open))
			}
			if !textContent(m.Content) {
				return fmt.Sprintf("messages[%d]: content is required", i)
			}
		case "assistant":
			if len(open) > 0 {
				return fmt.Sprintf("messages[%d]: tool calls %v were not answered by tool messages", i, keys(open))
			}
			if len(m.ToolCalls) == 0 && !textContent(m.Content) {
				return fmt.Sprintf("messages[%d]: an assistant message needs content or tool_calls", i)
			}
			for j, c := range m.ToolCalls {
				if c.ID == "" || c.Type != "function" || c.Function.Arguments == nil || !openAIName.MatchString(c.Function.Name) {
					return fmt.Sprintf("messages[%d].tool_calls[%d]: id, type function, a valid name and arguments are required", i, j)
				}
				open[c.ID] = true
			}
		case "tool":
			if !open[m.ToolCallID] {
				return fmt.Sprintf("messages[%d]: a tool message must answer a preceding tool call; %q is none", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			if !textContent(m.Content) {
				return fmt.Sprintf("messages[%d]: content is required", i)
			}
		default:
			return fmt.Sprintf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	if len(open) > 0 {
		return fmt.Sprintf("tool calls %v were not answered by tool messages", keys(open))
	}
	return ""
}

// CheckAnthropic says what is wrong with a Messages request body, or ""
// when nothing is.
func CheckAnthropic(raw []byte) string {
	var body struct {
		Model     string `json:"model"`
		MaxTokens *int   `json:"max_tokens"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return "the body is not a JSON object: " + err.Error()
	}
	switch {
	case body.Model == "":
		return "model: Field required"
	case body.MaxTokens == nil || *body.MaxTokens < 1:
		return "max_tokens: Field required"
	case len(body.Messages) == 0:
		return "messages: at least one message is required"
	case body.Messages[0].Role != "user":
		return "messages: the first message must use the user role"
	}
	seen := map[string]bool{}
	for i, t := range body.Tools {
		if !anthropicName.MatchString(t.Name) {
			return fmt.Sprintf("tools.%d.name: String should match pattern %s", i, anthropicName)
		}
		if seen[t.Name] {
			return fmt.Sprintf("tools: Tool names must be unique (%s)", t.Name)
		}
		seen[t.Name] = true
		if len(t.InputSchema) == 0 {
			return fmt.Sprintf("tools.%d.input_schema: Field required", i)
		}
		if msg := rootSchema(t.InputSchema, "oneOf", "anyOf", "allOf"); msg != "" {
			return fmt.Sprintf("tools.%d.custom.input_schema: %s", i, msg)
		}
	}
	// Roles alternate; every tool_use is answered by a tool_result in the
	// next message, and every tool_result answers one.
	var open map[string]bool
	for i, m := range body.Messages {
		if i > 0 && m.Role == body.Messages[i-1].Role {
			return fmt.Sprintf("messages.%d: roles must alternate between user and assistant", i)
		}
		var blocks []map[string]any
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			if open != nil {
				return fmt.Sprintf("messages.%d: tool_use ids %v were found without tool_result blocks immediately after", i, keys(open))
			}
			if strings.TrimSpace(text) == "" {
				return fmt.Sprintf("messages.%d: text content blocks must be non-empty", i)
			}
			continue
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil || len(blocks) == 0 {
			return fmt.Sprintf("messages.%d.content: a string or a non-empty list of blocks is required", i)
		}
		answered := map[string]bool{}
		var uses map[string]bool
		for j, b := range blocks {
			switch b["type"] {
			case "text":
				if s, _ := b["text"].(string); strings.TrimSpace(s) == "" {
					return fmt.Sprintf("messages.%d.content.%d: text content blocks must be non-empty", i, j)
				}
			case "tool_use":
				if m.Role != "assistant" {
					return fmt.Sprintf("messages.%d.content.%d: tool_use only in assistant messages", i, j)
				}
				id, _ := b["id"].(string)
				name, _ := b["name"].(string)
				if _, ok := b["input"].(map[string]any); !ok || id == "" || !anthropicName.MatchString(name) {
					return fmt.Sprintf("messages.%d.content.%d: tool_use needs an id, a valid name and an input object", i, j)
				}
				if uses == nil {
					uses = map[string]bool{}
				}
				uses[id] = true
			case "tool_result":
				if m.Role != "user" {
					return fmt.Sprintf("messages.%d.content.%d: tool_result only in user messages", i, j)
				}
				id, _ := b["tool_use_id"].(string)
				if !open[id] {
					return fmt.Sprintf("messages.%d.content.%d: unexpected tool_use_id found in tool_result blocks: %s. Each tool_result block must have a corresponding tool_use block in the previous message.", i, j, id)
				}
				answered[id] = true
			case "image":
				if m.Role != "user" {
					return fmt.Sprintf("messages.%d.content.%d: images only in user messages", i, j)
				}
			default:
				return fmt.Sprintf("messages.%d.content.%d: unexpected block type %v", i, j, b["type"])
			}
		}
		for id := range open {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %s", i, id)
			}
		}
		open = uses
	}
	return ""
}

// rootSchema says what is wrong with a tool's input schema at its root:
// not an object schema of type object, or one of refused there.
func rootSchema(raw json.RawMessage, refused ...string) string {
	var s map[string]json.RawMessage
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		return "the schema must be a JSON object"
	}
	var typ string
	if json.Unmarshal(s["type"], &typ) != nil || typ != "object" {
		return `schema must be a JSON Schema of 'type: "object"'`
	}
	for _, k := range refused {
		if _, ok := s[k]; ok {
			return fmt.Sprintf("schema must have type 'object' and not have '%s' at the top level", k)
		}
	}
	return ""
}

// textContent reports whether a message's content is text: a non-empty
// string, or text parts.
func textContent(raw json.RawMessage) bool {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s != ""
	}
	var parts []map[string]any
	return json.Unmarshal(raw, &parts) == nil && len(parts) > 0
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
