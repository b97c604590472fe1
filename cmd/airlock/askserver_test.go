//lint:file-ignore SA1019 a server may still ask for a sample or its client's roots, which protocol version 2026-07-28 deprecates (SEP-2577); the tests drive it.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test server's tools that ask a person (serveTestServer adds them):
// in the 2026-07-28 era with input_required results that the client
// answers by calling again (SEP-2322), in the 2025-11-25 era with
// elicitation/create during the call, as the SDK's servers do.

// askForm is the form ask_form asks for: a default (SEP-1034), choices
// titled with oneOf (SEP-1330), a number and a yes or no.
var askForm = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"name":   map[string]any{"type": "string", "title": "Your name", "default": "Ada"},
		"colour": map[string]any{"type": "string", "oneOf": []any{map[string]any{"const": "red", "title": "Red"}, map[string]any{"const": "green", "title": "Green"}}},
		"count":  map[string]any{"type": "integer", "minimum": 1},
		"sure":   map[string]any{"type": "boolean"},
	},
	"required": []any{"colour", "count"},
}

// addAskTools adds ask_form (one form), ask_url (a link), ask_twice (two
// questions, one after the other), ask_forever (a question after every
// answer, never done), sample (a sampling request) and roots (the
// client's roots: "roots N: URI,…", "roots refused: …", or, from a
// 2026-07-28 call that did not offer roots, "roots not offered"); each
// answers with what it was told.
func addAskTools(s *mcp.Server) {
	object := map[string]any{"type": "object"}
	s.AddTool(&mcp.Tool{Name: "ask_form", Description: "Ask for a form.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return askRounds(ctx, req, []*mcp.ElicitParams{{Mode: "form", Message: "Who are you?", RequestedSchema: askForm}})
		})
	s.AddTool(&mcp.Tool{Name: "ask_url", Description: "Send the person to a link.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return askRounds(ctx, req, []*mcp.ElicitParams{{Mode: "url", Message: "Connect your account.",
				URL: "https://auth.example.com/connect?state=xyz", ElicitationID: "el-1"}})
		})
	s.AddTool(&mcp.Tool{Name: "ask_twice", Description: "Ask two questions.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			yes := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []any{"ok"}}
			return askRounds(ctx, req, []*mcp.ElicitParams{{Mode: "form", Message: "First question?", RequestedSchema: yes},
				{Mode: "form", Message: "Second question?", RequestedSchema: yes}})
		})
	s.AddTool(&mcp.Tool{Name: "ask_forever", Description: "Ask again after every answer.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			again := &mcp.ElicitParams{Mode: "form", Message: "Again?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
			if !modernSession(req) {
				for {
					if _, err := req.Session.Elicit(ctx, again); err != nil {
						return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
					}
				}
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"again": again}, RequestState: "forever"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "sample", Description: "Ask the client's model.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			params := &mcp.CreateMessageParams{SystemPrompt: "Be brief.", MaxTokens: 50,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "Say hi."}}}}
			if !modernSession(req) {
				res, err := req.Session.CreateMessage(ctx, params)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed: " + err.Error()}}}, nil
				}
				return sampled(res), nil
			}
			switch res := req.Params.InputResponses["s"].(type) {
			case *mcp.CreateMessageResult:
				return sampled(res), nil
			case *mcp.CreateMessageWithToolsResult:
				if len(res.Content) == 1 {
					return sampled(&mcp.CreateMessageResult{Content: res.Content[0]}), nil
				}
			}
			if len(req.Params.InputResponses) > 0 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "sampling failed"}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s": params}, RequestState: "sampling"}, nil
		})
	s.AddTool(&mcp.Tool{Name: "roots", Description: "Ask for the client's roots.", InputSchema: object},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			said := func(res *mcp.ListRootsResult) *mcp.CallToolResult {
				var uris []string
				for _, r := range res.Roots {
					uris = append(uris, r.URI)
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("roots %d: %s", len(uris), strings.Join(uris, ","))}}}
			}
			if !modernSession(req) {
				res, err := req.Session.ListRoots(ctx, nil)
				if err != nil {
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "roots refused: " + err.Error()}}}, nil
				}
				return said(res), nil
			}
			if res, ok := req.Params.InputResponses["client_roots"].(*mcp.ListRootsResult); ok {
				return said(res), nil
			}
			if caps := req.ClientCapabilities(); caps == nil || caps.RootsV2 == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "roots not offered"}}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}}, nil
		})
}

func sampled(res *mcp.CreateMessageResult) *mcp.CallToolResult {
	text := ""
	if t, ok := res.Content.(*mcp.TextContent); ok {
		text = t.Text
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the model said: " + text}}}
}

// modernSession reports whether req came from a 2026-07-28 client.
func modernSession(req *mcp.CallToolRequest) bool {
	p := req.Session.InitializeParams()
	return p == nil || p.ProtocolVersion >= "2026-07-28"
}

// askRounds asks questions one after the other and answers with what each
// answer was ("accept {…}", "decline", "cancel"), one per line: in
// input_required rounds, whose request state counts the answers so far
// (and must come back unchanged), or with elicitation/create.
func askRounds(ctx context.Context, req *mcp.CallToolRequest, questions []*mcp.ElicitParams) (*mcp.CallToolResult, error) {
	var answers []string
	if !modernSession(req) {
		for _, q := range questions {
			res, err := req.Session.Elicit(ctx, q)
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: " + err.Error()}}}, nil
			}
			answers = append(answers, answerText(res))
			if res.Action != "accept" {
				break
			}
		}
		return done(answers), nil
	}
	p := req.Params
	if p.RequestState != "" {
		if err := json.Unmarshal([]byte(p.RequestState), &answers); err != nil {
			return nil, fmt.Errorf("request state %q was changed", p.RequestState)
		}
		res, ok := p.InputResponses[fmt.Sprintf("q%d", len(answers))].(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("no answer to question %d", len(answers))
		}
		answers = append(answers, answerText(res))
		if res.Action != "accept" {
			return done(answers), nil
		}
	}
	if len(answers) == len(questions) {
		return done(answers), nil
	}
	state, _ := json.Marshal(append([]string{}, answers...))
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{fmt.Sprintf("q%d", len(answers)): questions[len(answers)]},
		RequestState: string(state)}, nil
}

func answerText(res *mcp.ElicitResult) string {
	if res.Action != "accept" || res.Content == nil {
		return res.Action
	}
	b, _ := json.Marshal(res.Content)
	return "accept " + string(b)
}

func done(answers []string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(answers, "\n")}}}
}
