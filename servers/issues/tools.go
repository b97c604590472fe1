package issues

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/auth/bearer"
)

// The scopes the tools need.
const (
	ScopeRead  = "mcp:issues.read"
	ScopeWrite = "mcp:issues.write"
)

// Scopes lists every scope the server knows, for metadata and challenges.
var Scopes = []string{ScopeRead, ScopeWrite}

// toolScopes is the scope each tool requires. The HTTP layer enforces it
// (403 insufficient_scope) before the call reaches the SDK, and each handler
// checks it again.
var toolScopes = map[string]string{
	"get_issue":    ScopeRead,
	"list_issues":  ScopeRead,
	"create_issue": ScopeWrite,
	"close_issue":  ScopeWrite,
}

// Limits on tool arguments.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
	maxTitle        = 200
	maxBody         = 10000
)

const (
	idPattern      = `^ISSUE-[0-9]+$`
	projectPattern = `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`
	keyPattern     = `^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`
)

// Issue is an issue as the tools return it.
type Issue struct {
	ID        string `json:"id" jsonschema:"stable id, ISSUE-<number>"`
	Project   string `json:"project" jsonschema:"the project the issue belongs to"`
	Title     string `json:"title"`
	Body      string `json:"body"`
	Status    string `json:"status" jsonschema:"open or closed"`
	CreatedBy string `json:"created_by" jsonschema:"subject of the token that created the issue"`
	CreatedAt string `json:"created_at" jsonschema:"RFC 3339 time"`
	ClosedBy  string `json:"closed_by,omitempty" jsonschema:"subject of the token that closed the issue"`
	ClosedAt  string `json:"closed_at,omitempty" jsonschema:"RFC 3339 time"`
}

// GetIssueInput is the input of get_issue.
type GetIssueInput struct {
	ID string `json:"id" jsonschema:"the issue id, for example ISSUE-42"`
}

// ListIssuesInput is the input of list_issues.
type ListIssuesInput struct {
	Project string `json:"project,omitempty" jsonschema:"only issues of this project"`
	Status  string `json:"status,omitempty" jsonschema:"open, closed or all (default all)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"issues per page, 1 to 100 (default 20)"`
	Cursor  string `json:"cursor,omitempty" jsonschema:"next_cursor from the previous page"`
}

// ListIssuesOutput is the output of list_issues.
type ListIssuesOutput struct {
	Issues     []Issue `json:"issues"`
	NextCursor string  `json:"next_cursor,omitempty" jsonschema:"present when more issues follow; pass it as cursor"`
}

// CreateIssueInput is the input of create_issue.
type CreateIssueInput struct {
	Project        string `json:"project" jsonschema:"the project to file the issue in"`
	Title          string `json:"title"`
	Body           string `json:"body,omitempty"`
	IdempotencyKey string `json:"idempotency_key" jsonschema:"a key unique to this creation, chosen by the caller; repeating a call with the same key returns the first result and creates nothing"`
}

// CreateIssueOutput is the output of create_issue.
type CreateIssueOutput struct {
	Issue   Issue `json:"issue"`
	Created bool  `json:"created" jsonschema:"false when the idempotency key had already created this issue"`
}

// CloseIssueInput is the input of close_issue.
type CloseIssueInput struct {
	ID string `json:"id" jsonschema:"the issue id, for example ISSUE-42"`
}

func (s *Server) addTools() error {
	idSchema := func(p *jsonschema.Schema) { p.Pattern = idPattern }
	get, err := inputSchema[GetIssueInput](map[string]func(*jsonschema.Schema){"id": idSchema})
	if err != nil {
		return err
	}
	list, err := inputSchema[ListIssuesInput](map[string]func(*jsonschema.Schema){
		"project": func(p *jsonschema.Schema) { p.Pattern = projectPattern },
		"status":  func(p *jsonschema.Schema) { p.Enum = []any{StatusOpen, StatusClosed, "all"} },
		"limit": func(p *jsonschema.Schema) {
			p.Minimum, p.Maximum = ptr(1.0), ptr(float64(MaxPageSize))
		},
		"cursor": func(p *jsonschema.Schema) { p.MaxLength = ptr(64) },
	})
	if err != nil {
		return err
	}
	create, err := inputSchema[CreateIssueInput](map[string]func(*jsonschema.Schema){
		"project":         func(p *jsonschema.Schema) { p.Pattern = projectPattern },
		"title":           func(p *jsonschema.Schema) { p.MinLength, p.MaxLength = ptr(1), ptr(maxTitle) },
		"body":            func(p *jsonschema.Schema) { p.MaxLength = ptr(maxBody) },
		"idempotency_key": func(p *jsonschema.Schema) { p.Pattern = keyPattern },
	})
	if err != nil {
		return err
	}
	closeIn, err := inputSchema[CloseIssueInput](map[string]func(*jsonschema.Schema){"id": idSchema})
	if err != nil {
		return err
	}

	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "get_issue",
		Title:       "Get issue",
		Description: "Read one issue of your tenant by its stable id.",
		InputSchema: get,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.getIssue)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "list_issues",
		Title:       "List issues",
		Description: "List your tenant's issues in id order, optionally of one project or status, a page at a time.",
		InputSchema: list,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.listIssues)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:  "create_issue",
		Title: "Create issue",
		Description: "File a new open issue in a project. Pass a fresh idempotency_key per issue: " +
			"retrying with the same key returns the issue the first call created instead of creating another.",
		InputSchema: create,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.createIssue)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name:        "close_issue",
		Title:       "Close issue",
		Description: "Close an issue of your tenant. There is no tool to reopen it. Closing a closed issue changes nothing.",
		InputSchema: closeIn,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, s.closeIssue)
	return nil
}

// inputSchema infers T's schema and refines its properties.
func inputSchema[T any](refine map[string]func(*jsonschema.Schema)) (*jsonschema.Schema, error) {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	for name, f := range refine {
		p, ok := sch.Properties[name]
		if !ok {
			return nil, fmt.Errorf("schema of %T has no property %q", *new(T), name)
		}
		f(p)
	}
	return sch, nil
}

func ptr[T any](v T) *T { return &v }

// caller returns the principal of a tool call after checking that it holds
// scope. The HTTP layer has already refused calls without the scope; this
// keeps the handlers safe when served some other way.
func caller(req *mcp.CallToolRequest, scope string) (*bearer.Principal, error) {
	var p *bearer.Principal
	if req.Extra != nil {
		p = bearer.PrincipalFromTokenInfo(req.Extra.TokenInfo)
	}
	if p == nil || p.Tenant == "" || p.Subject == "" {
		return nil, errors.New("the request is not authenticated")
	}
	if !p.HasScope(scope) {
		return nil, fmt.Errorf("this tool needs the scope %s", scope)
	}
	return p, nil
}

func (s *Server) getIssue(ctx context.Context, req *mcp.CallToolRequest, in GetIssueInput) (*mcp.CallToolResult, Issue, error) {
	p, err := caller(req, ScopeRead)
	if err != nil {
		return nil, Issue{}, err
	}
	seq, ok := parseID(in.ID)
	if !ok {
		return nil, Issue{}, notFound(in.ID)
	}
	is, err := s.store.get(ctx, p.Tenant, seq)
	if err != nil {
		return nil, Issue{}, s.toolError(ctx, "get_issue", in.ID, err)
	}
	return nil, is, nil
}

func (s *Server) listIssues(ctx context.Context, req *mcp.CallToolRequest, in ListIssuesInput) (*mcp.CallToolResult, ListIssuesOutput, error) {
	p, err := caller(req, ScopeRead)
	if err != nil {
		return nil, ListIssuesOutput{}, err
	}
	q := listQuery{project: in.Project, limit: in.Limit}
	switch in.Status {
	case "", "all":
	case StatusOpen, StatusClosed:
		q.status = in.Status
	default:
		return nil, ListIssuesOutput{}, fmt.Errorf("status must be open, closed or all")
	}
	if q.limit == 0 {
		q.limit = DefaultPageSize
	}
	if q.limit < 1 || q.limit > MaxPageSize {
		return nil, ListIssuesOutput{}, fmt.Errorf("limit must be between 1 and %d", MaxPageSize)
	}
	if in.Cursor != "" {
		after, ok := parseCursor(in.Cursor)
		if !ok {
			return nil, ListIssuesOutput{}, errors.New("cursor is not one this server returned; start again without a cursor")
		}
		q.after = after
	}
	issues, more, err := s.store.list(ctx, p.Tenant, q)
	if err != nil {
		return nil, ListIssuesOutput{}, s.toolError(ctx, "list_issues", "", err)
	}
	out := ListIssuesOutput{Issues: issues}
	if more {
		last, _ := parseID(issues[len(issues)-1].ID)
		out.NextCursor = formatCursor(last)
	}
	return nil, out, nil
}

func (s *Server) createIssue(ctx context.Context, req *mcp.CallToolRequest, in CreateIssueInput) (*mcp.CallToolResult, CreateIssueOutput, error) {
	p, err := caller(req, ScopeWrite)
	if err != nil {
		return nil, CreateIssueOutput{}, err
	}
	is, created, err := s.store.create(ctx, p.Tenant, p.Subject, newIssue{
		project: in.Project, title: in.Title, body: in.Body, key: in.IdempotencyKey,
	})
	if errors.Is(err, errKeyReused) {
		return nil, CreateIssueOutput{}, fmt.Errorf("idempotency_key %q already created %s with different arguments; use a new key for a new issue", in.IdempotencyKey, is.ID)
	}
	if err != nil {
		return nil, CreateIssueOutput{}, s.toolError(ctx, "create_issue", "", err)
	}
	if created {
		s.logger.InfoContext(ctx, "issue created", "tenant", p.Tenant, "sub", p.Subject, "issue", is.ID)
	}
	return nil, CreateIssueOutput{Issue: is, Created: created}, nil
}

func (s *Server) closeIssue(ctx context.Context, req *mcp.CallToolRequest, in CloseIssueInput) (*mcp.CallToolResult, Issue, error) {
	p, err := caller(req, ScopeWrite)
	if err != nil {
		return nil, Issue{}, err
	}
	seq, ok := parseID(in.ID)
	if !ok {
		return nil, Issue{}, notFound(in.ID)
	}
	is, err := s.store.closeIssue(ctx, p.Tenant, p.Subject, seq)
	if err != nil {
		return nil, Issue{}, s.toolError(ctx, "close_issue", in.ID, err)
	}
	return nil, is, nil
}

// notFound is the one answer for an issue the caller cannot see, whether it
// belongs to another tenant or to nobody.
func notFound(id string) error {
	return fmt.Errorf("issue %s does not exist", clip(id))
}

// toolError turns a store error into what the caller sees: not found as
// such, anything else as a generic failure whose cause goes to the log only.
func (s *Server) toolError(ctx context.Context, tool, id string, err error) error {
	if errors.Is(err, errNotFound) {
		return notFound(id)
	}
	s.logger.ErrorContext(ctx, "tool failed", "tool", tool, "error", err)
	if ctx.Err() != nil {
		return errors.New("the request was cancelled")
	}
	return errors.New("the issue store failed; try again later")
}

func formatID(seq int64) string { return "ISSUE-" + strconv.FormatInt(seq, 10) }

// parseID returns the number of an ISSUE-<n> id. Ids that do not parse (too
// large, say) name no issue.
func parseID(id string) (int64, bool) {
	digits, ok := strings.CutPrefix(id, "ISSUE-")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// Cursors are opaque to clients: the last id of the page, encoded. They
// carry no tenant; the tenant always comes from the token.
func formatCursor(after int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("after:" + strconv.FormatInt(after, 10)))
}

func parseCursor(c string) (int64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(raw), "after:")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n >= 0
}
