package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// A page is what every template gets: the page's name (for the menu and
// its stream), the viewer, the session's CSRF token, a flash message from
// the action before, and the page's own data.
type page struct {
	Name   string
	Title  string
	Viewer string
	All    bool // the viewer acts for every principal
	Signed bool // the viewer signed in (and may sign out)
	CSRF   string
	Flash  string
	Error  string
	Self   string // the page's URL, query included, for refreshes
	Stream string // the URL of the page's event stream
	Now    time.Time
	Data   any
}

// render writes the page name with data, as HTML.
func (c *Console) render(w http.ResponseWriter, r *http.Request, name, title string, data any) {
	c.renderStatus(w, r, http.StatusOK, name, title, data)
}

// renderStatus writes the page name with data, as HTML, with status.
func (c *Console) renderStatus(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	as := c.actor(r)
	p := page{Name: name, Title: title, Viewer: as.Principal.Tenant + "/" + as.Principal.User, All: as.AllPrincipals,
		Signed: c.signin != nil, CSRF: c.csrfToken(c.session(w, r)), Flash: c.flash(r), Self: r.URL.RequestURI(),
		Now: time.Now(), Data: data}
	p.Stream, _ = r.Context().Value(streamKey{}).(string)
	if as.AllPrincipals {
		p.Viewer = "every tenant and user (operator)"
	}
	var buf bytes.Buffer
	if err := c.pages.ExecuteTemplate(&buf, name, p); err != nil {
		c.log.Error("console page failed", "page", name, "error", err)
		http.Error(w, "the page cannot be shown: "+err.Error(), http.StatusInternalServerError)
		return
	}
	pageHeaders(w)
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// pageHeaders are the headers of every page: HTML, kept from caches. They
// are set before the status is written, or they are not sent.
func pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
}

// fail writes an error page with status.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	pageHeaders(w)
	w.WriteHeader(status)
	c.renderError(w, r, msg)
}

func (c *Console) renderError(w http.ResponseWriter, r *http.Request, msg string) {
	as := c.actor(r)
	p := page{Name: "error", Title: "Error", Viewer: as.Principal.Tenant + "/" + as.Principal.User, Error: msg, Now: time.Now()}
	if err := c.pages.ExecuteTemplate(w, "error", p); err != nil {
		c.log.Error("console page failed", "page", "error", "error", err)
	}
}

// storeFailed writes the page for a store error: an unknown id or a
// settled request is the viewer's mistake (409 / 404), another
// principal's is 404 without saying whose, anything else is 503.
func (c *Console) storeFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, airlock.ErrOtherPrincipal), errors.Is(err, store.ErrNotFound):
		c.fail(w, r, http.StatusNotFound, "There is no such request or record for "+c.viewerName(r)+".")
	case errors.Is(err, store.ErrConflict):
		c.fail(w, r, http.StatusConflict, printable(err.Error(), 500)+". Reload the page to see where it stands.")
	default:
		c.log.Warn("console: the store failed", "error", err)
		c.fail(w, r, http.StatusServiceUnavailable, "The store cannot be read: "+printable(err.Error(), 500))
	}
}

func (c *Console) viewerName(r *http.Request) string {
	as := c.actor(r)
	if as.AllPrincipals {
		return "anyone"
	}
	return as.Principal.Tenant + "/" + as.Principal.User
}

// done redirects, after an action, to the page it was taken on, with a
// message to show there.
func (c *Console) done(w http.ResponseWriter, r *http.Request, to, msg string) {
	http.Redirect(w, r, to+"?done="+url.QueryEscape(msg)+"&seal="+c.seal(msg), http.StatusSeeOther)
}

// refuse writes the page for a POST that checkAction refused.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, err error) {
	c.log.Warn("console: action refused", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "error", err)
	c.fail(w, r, http.StatusForbidden, strings.TrimPrefix(err.Error(), errForbidden.Error()+": "))
}

// An approvalView is one approval request as the approvals page shows it.
type approvalView struct {
	store.Approval
	Rememberable bool // "approve always" may be offered
}

type approvalsData struct {
	Requests []approvalView
	All      bool // every request, not only pending ones
	Hooks    bool // policy.hooks are configured: no "always"
}

func (c *Console) approvals(w http.ResponseWriter, r *http.Request) {
	all := r.URL.Query().Get("all") != ""
	f := store.ApprovalFilter{Status: store.ApprovalPending}
	if all {
		f.Status = ""
	}
	list, err := c.listApprovals(r, f)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	hooks := len(c.opts.Config.Policy.Hooks) > 0
	d := approvalsData{All: all, Hooks: hooks}
	for _, a := range slices.Backward(list) { // newest first
		d.Requests = append(d.Requests, approvalView{a, !hooks && a.Definition != ""})
	}
	c.render(w, r, "approvals", "Approvals", d)
}

// listApprovals lists the approval requests the viewer may see. An
// operator's listing is not written to the audit trail each time a page
// refreshes; what an operator does is.
func (c *Console) listApprovals(r *http.Request, f store.ApprovalFilter) ([]store.Approval, error) {
	ctx, cancel := pageContext(r)
	defer cancel()
	as := c.actor(r)
	if !as.AllPrincipals {
		f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
	}
	return c.opts.Store.Approvals().List(ctx, f)
}

// decide takes an approve, approve-always or deny of an approval request.
func (c *Console) decide(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	id, action, note := r.PathValue("id"), r.PathValue("action"), r.PostForm.Get("note")
	as := c.actor(r)
	var err error
	var msg string
	switch action {
	case "approve":
		err = airlock.DecideApproval(ctx, c.opts.Store, id, true, note, as)
		msg = "Approved " + id + ": the call may run once."
	case "always":
		if len(c.opts.Config.Policy.Hooks) > 0 {
			c.fail(w, r, http.StatusConflict, "policy.hooks are configured, and an answer remembered for a tool would answer a hook's question too: approve once instead.")
			return
		}
		var rule store.AllowRule
		rule, err = airlock.RememberApproval(ctx, c.opts.Store, id, note, as)
		msg = fmt.Sprintf("Approved %s, and remembered as rule %s: later calls of %s run without asking while policy would ask.", id, rule.ID, rule.Tool)
	case "deny":
		err = airlock.DecideApproval(ctx, c.opts.Store, id, false, note, as)
		msg = fmt.Sprintf("Denied %s: the same call is refused without asking for %s.", id, c.opts.Config.Approvals.TTL)
	default:
		c.fail(w, r, http.StatusNotFound, "An approval request is approved, approved always, or denied.")
		return
	}
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	c.done(w, r, Prefix+"approvals", msg)
}

// A recordView is one journal record as the recovery page shows it.
type recordView struct {
	store.Record
	Args string // the arguments kept (redacted), indented
}

type recoveryData struct {
	Records []recordView
	All     bool
}

func (c *Console) recovery(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	all := r.URL.Query().Get("all") != ""
	as := c.actor(r)
	f := store.RecordFilter{All: all}
	if !as.AllPrincipals {
		f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
	}
	recs, err := c.opts.Store.Journal().Records(ctx, f)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	d := recoveryData{All: all}
	for _, rec := range slices.Backward(recs) {
		v := recordView{Record: rec}
		var buf bytes.Buffer
		if len(rec.Arguments) > 0 && json.Indent(&buf, rec.Arguments, "", "  ") == nil {
			v.Args = buf.String()
		}
		d.Records = append(d.Records, v)
	}
	c.render(w, r, "recovery", "Recovery", d)
}

func (c *Console) resolve(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	id, outcome := r.PathValue("id"), store.Resolution(r.PostForm.Get("outcome"))
	if !outcome.Valid() {
		c.fail(w, r, http.StatusBadRequest, "Choose what you found: applied (the call took effect) or not applied. Check whether it took effect first.")
		return
	}
	if err := airlock.ResolveRecovery(ctx, c.opts.Store, id, outcome, r.PostForm.Get("note"), c.actor(r)); err != nil {
		c.storeFailed(w, r, err)
		return
	}
	c.done(w, r, Prefix+"recovery", fmt.Sprintf("Resolved %s as %s.", id, outcome))
}

// A serverView is one server as the servers page shows it.
type serverView struct {
	airlock.ServerStatus
	Error   string
	Allowed []airlock.Offer
	Other   []airlock.Offer // offered, not allowed
}

type serversData struct {
	Starting bool
	Servers  []serverView
}

func (c *Console) servers(w http.ResponseWriter, r *http.Request) {
	h := c.runningHost(r)
	d := serversData{Starting: h == nil}
	if h != nil {
		offers := h.Available()
		for _, s := range h.Servers() {
			v := serverView{ServerStatus: s}
			if s.Err != nil {
				v.Error = printable(s.Err.Error(), 2000)
			}
			for _, o := range offers {
				switch {
				case o.Server != s.ID:
				case o.Allowed:
					v.Allowed = append(v.Allowed, o)
				default:
					v.Other = append(v.Other, o)
				}
			}
			d.Servers = append(d.Servers, v)
		}
	}
	c.render(w, r, "servers", "Servers", d)
}

func (c *Console) tasks(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	list, err := airlock.ListTasksWith(ctx, c.opts.Store, c.opts.StateDir)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	as, host := c.actor(r), airlock.ConfigPrincipal(c.opts.Config)
	list = slices.DeleteFunc(list, func(t airlock.ListedTask) bool {
		who := airlock.Principal{Tenant: t.Tenant, User: t.User}
		if who == (airlock.Principal{}) {
			who = host // a task acts for the host's principal unless it names another
		}
		return !as.AllPrincipals && who != as.Principal
	})
	c.render(w, r, "tasks", "Tasks", list)
}

// A runView is one agent run as the runs page shows it.
type runView struct {
	store.RunRecord
	Interrupted bool // running, but its process is gone
}

type runsData struct {
	Kept bool // the store keeps runs
	Runs []runView
}

func (c *Console) runs(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	d := runsData{}
	if runs, ok := c.opts.Store.(store.Runs); ok {
		d.Kept = true
		f := store.RunFilter{Limit: 200}
		if as := c.actor(r); !as.AllPrincipals {
			f.Tenant, f.User = as.Principal.Tenant, as.Principal.User
		}
		list, err := runs.RunRecords(ctx, f)
		if err != nil {
			c.storeFailed(w, r, err)
			return
		}
		for _, run := range list {
			v := runView{RunRecord: run}
			if run.Status == store.RunRunning && c.opts.RunLive != nil && !c.opts.RunLive(run.ID) {
				v.Interrupted = true
			}
			d.Runs = append(d.Runs, v)
		}
	}
	c.render(w, r, "runs", "Runs", d)
}

// auditFilter is what the audit page's form selects.
type auditFilter struct {
	Server, Tool, Class, Event, Tenant, User, Call string
	Since                                          string // a duration, such as 1h
	Limit                                          int
}

// auditLimit bounds the events one audit page shows.
const auditLimit = 500

func parseAuditFilter(q url.Values) (auditFilter, time.Duration, error) {
	f := auditFilter{Server: q.Get("server"), Tool: q.Get("tool"), Class: q.Get("class"), Event: q.Get("event"),
		Tenant: q.Get("tenant"), User: q.Get("user"), Call: q.Get("call"), Since: q.Get("since"), Limit: 200}
	since := 24 * time.Hour
	if f.Since != "" {
		d, err := time.ParseDuration(f.Since)
		if err != nil || d <= 0 {
			return f, 0, fmt.Errorf("since %q is not a duration: use one such as 30m, 2h or 48h", printable(f.Since, 40))
		}
		since = d
	} else {
		f.Since = "24h"
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 || n > auditLimit {
			return f, 0, fmt.Errorf("limit %q must be a number from 1 to %d", printable(l, 40), auditLimit)
		}
		f.Limit = n
	}
	return f, since, nil
}

// match reports whether ev is one the filter selects.
func (f auditFilter) match(ev store.Event) bool {
	field := func(k string) string { s, _ := ev.Fields[k].(string); return s }
	return (f.Server == "" || ev.Server == f.Server) && (f.Tool == "" || ev.Tool == f.Tool) &&
		(f.Class == "" || ev.Class == f.Class) && (f.Event == "" || ev.Event == f.Event) &&
		(f.Tenant == "" || field("tenant") == f.Tenant) && (f.User == "" || field("user") == f.User) &&
		(f.Call == "" || field("call") == f.Call)
}

// visible reports whether as may see ev: an operator sees every event; a
// principal, the events of its own calls and decisions and those that
// name no principal (servers starting, configuration warnings). An event
// of a call that names nobody (written before every event of a call named
// its principal) is an operator's to see.
func visible(as airlock.Actor, ev store.Event) bool {
	if as.AllPrincipals {
		return true
	}
	tenant, hasTenant := ev.Fields["tenant"]
	user, hasUser := ev.Fields["user"]
	if !hasTenant && !hasUser {
		_, ofACall := ev.Fields["call"]
		return !ofACall
	}
	return tenant == as.Principal.Tenant && user == as.Principal.User
}

// An eventView is one audit event as the audit page shows it.
type eventView struct {
	store.Event
	Details []detail
}

type detail struct{ Key, Value string }

type auditData struct {
	Filter  auditFilter
	Events  []eventView
	Omitted int // matching events older than those shown
	Classes []string
}

func (c *Console) audit(w http.ResponseWriter, r *http.Request) {
	f, since, err := parseAuditFilter(r.URL.Query())
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	events, omitted, err := c.auditEvents(r, f, since)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	d := auditData{Filter: f, Omitted: omitted, Classes: classes}
	for _, ev := range slices.Backward(events) { // newest first
		v := eventView{Event: ev}
		for _, k := range sortedKeys(ev.Fields) {
			v.Details = append(v.Details, detail{k, printable(fmt.Sprint(ev.Fields[k]), 300)})
		}
		d.Events = append(d.Events, v)
	}
	c.render(w, r, "audit", "Audit trail", d)
}

// auditScan bounds the events one audit page reads from the trail to find
// those it shows.
const auditScan = 20000

// auditEvents returns the newest f.Limit events since since that f
// selects and the viewer may see, oldest first, and how many more
// matched.
func (c *Console) auditEvents(r *http.Request, f auditFilter, since time.Duration) ([]store.Event, int, error) {
	ctx, cancel := pageContext(r)
	defer cancel()
	page, err := c.opts.Store.Audit().Tail(ctx, time.Now().Add(-since), 0, auditScan)
	if err != nil {
		return nil, 0, err
	}
	as := c.actor(r)
	var out []store.Event
	for _, ev := range page.Events {
		if visible(as, ev) && f.match(ev) {
			out = append(out, ev)
		}
	}
	omitted := 0
	if len(out) > f.Limit {
		omitted = len(out) - f.Limit
		out = out[omitted:]
	}
	return out, omitted, nil
}

// classes are the result classes the audit filter offers.
var classes = []string{string(airlock.OK), string(airlock.ToolError), string(airlock.Denied), string(airlock.ApprovalRequired),
	string(airlock.InvalidArguments), string(airlock.UnknownTool), string(airlock.OutcomeUnknown), string(airlock.ContractError),
	string(airlock.ConnectionError), string(airlock.AuthRequired), string(airlock.Busy), string(airlock.Cancelled)}

func (c *Console) verify(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := pageContext(r)
	defer cancel()
	rep, err := c.opts.Store.Audit().Verify(ctx)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	c.render(w, r, "verify", "Audit trail: verify", rep)
}
