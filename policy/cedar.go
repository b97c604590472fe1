package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"

	"github.com/airlockhq/airlock/internal/canonical"
)

// maxCedarBytes bounds a Cedar file; real ones are a few kilobytes.
const maxCedarBytes = 4 << 20

// cedarPolicies is a loaded Cedar file.
type cedarPolicies struct {
	set *cedar.PolicySet
}

// loadCedar reads and parses the Cedar file, named file as configured and
// resolved against dir. Messages name the file as configured, never the
// resolved host path.
func loadCedar(dir, file string) (*cedarPolicies, error) {
	p := file
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	data, err := readBounded(p)
	if err != nil {
		return nil, fmt.Errorf("read %q: %s", file, err)
	}
	set, err := cedar.NewPolicySetFromBytes(file, data)
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", file, err)
	}
	return &cedarPolicies{set: set}, nil
}

func readBounded(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, describeFSError(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, describeFSError(err)
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("it is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCedarBytes+1))
	if err != nil {
		return nil, describeFSError(err)
	}
	if len(data) > maxCedarBytes {
		return nil, errors.New("it is larger than 4 MiB")
	}
	return data, nil
}

// describeFSError says what went wrong with a file without its path.
func describeFSError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("it does not exist")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("permission denied")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return errors.New("it cannot be read")
}

// The entity types of a Cedar request.
const (
	userType   types.EntityType = "User"
	tenantType types.EntityType = "Tenant"
	actionType types.EntityType = "Action"
	serverType types.EntityType = "Server"
)

// The actions of a resource read and a prompt get. A local tool name has
// no /, so neither is ever a tool's action.
const (
	resourceAction = "resources/read"
	promptAction   = "prompts/get"
)

// cedarAction returns the action of a request, and its context: a tool
// call's arguments; the URI of a resource read; the local name and the
// arguments of a prompt get. Each action is a member of the action group
// of its effect.
func cedarAction(req Request) (string, types.Record) {
	switch req.Kind {
	case KindResource:
		return resourceAction, types.NewRecord(types.RecordMap{"uri": types.String(req.Resource)})
	case KindPrompt:
		return promptAction, types.NewRecord(types.RecordMap{
			"prompt":    types.String(req.Tool),
			"arguments": cedarRecord(req.Arguments),
		})
	}
	return req.Tool, cedarRecord(req.Arguments)
}

// decide evaluates the Cedar policies for a request. A forbid that applies
// denies. So does a forbid whose evaluation fails (Cedar itself skips a
// policy that fails; a forbid that a model can make fail by the shape of
// its arguments must not be a way around it). A permit that applies
// allows; a permit that fails does nothing. With neither, Cedar has no
// opinion.
func (c *cedarPolicies) decide(req Request, effect Effect) (opinion, bool) {
	user := types.NewEntityUID(userType, types.String(req.Principal.User))
	name, context := cedarAction(req)
	action := types.NewEntityUID(actionType, types.String(name))
	entities := types.EntityMap{
		user: {UID: user, Parents: types.NewEntityUIDSet(
			types.NewEntityUID(tenantType, types.String(req.Principal.Tenant)))},
		action: {UID: action, Parents: types.NewEntityUIDSet(
			types.NewEntityUID(actionType, types.String(effect)))},
	}
	decision, diag := cedar.Authorize(c.set, entities, cedar.Request{
		Principal: user,
		Action:    action,
		Resource:  types.NewEntityUID(serverType, types.String(req.Server)),
		Context:   context,
	})

	if decision == cedar.Deny && len(diag.Reasons) > 0 {
		name := c.name(diag.Reasons[0].PolicyID)
		return opinion{verdict: Deny, rule: name, reason: "forbidden by " + name}, true
	}
	for _, e := range diag.Errors {
		if p := c.set.Get(e.PolicyID); p != nil && p.Effect() == cedar.Forbid {
			name := c.name(e.PolicyID)
			return opinion{verdict: Deny, rule: name,
				reason: fmt.Sprintf("%s could not be evaluated for this call (%s); a forbid policy that fails denies", name, e.Message)}, true
		}
	}
	if decision == cedar.Allow && len(diag.Reasons) > 0 {
		name := c.name(diag.Reasons[0].PolicyID)
		return opinion{verdict: Allow, rule: name, reason: "permitted by " + name}, true
	}
	return opinion{}, false
}

// name names a policy for Decision.Rule: its @id annotation when it has
// one, else the id Cedar gave it, and where it is.
func (c *cedarPolicies) name(id types.PolicyID) string {
	label := string(id)
	p := c.set.Get(id)
	if p == nil {
		return "cedar policy " + label
	}
	if v, ok := p.Annotations()["id"]; ok && v != "" {
		label = string(v)
	}
	pos := p.Position()
	return fmt.Sprintf("cedar policy %q (%s:%d)", label, pos.Filename, pos.Line)
}

// cedarRecord converts a call's arguments into the Cedar context.
func cedarRecord(args map[string]any) types.Record {
	m := make(types.RecordMap, len(args))
	for k, v := range args {
		if cv, ok := cedarValue(v); ok {
			m[types.String(k)] = cv
		}
	}
	return types.NewRecord(m)
}

// cedarValue converts a decoded JSON value into a Cedar value:
//
//   - strings, booleans, arrays (as sets) and objects (as records) map
//     directly;
//   - null has no Cedar form: the attribute or element is left out, so
//     `context has x` is false for "x": null;
//   - a whole number that fits 64 bits is a Long (5, 5.0 and 5e0 alike);
//   - any other number with at most four decimal places, within Cedar's
//     range, is a Decimal;
//   - every other number is a String of its canonical text, so comparing it
//     with a number is an evaluation error (which denies in a forbid).
func cedarValue(v any) (types.Value, bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case string:
		return types.String(x), true
	case bool:
		return types.Boolean(x), true
	case map[string]any:
		return cedarRecord(x), true
	case []any:
		vals := make([]types.Value, 0, len(x))
		for _, e := range x {
			if cv, ok := cedarValue(e); ok {
				vals = append(vals, cv)
			}
		}
		return types.NewSet(vals...), true
	}
	n, ok, err := canonical.NumberOf(v)
	switch {
	case !ok:
		// Not what the host decodes; take the JSON form of it.
		raw, merr := json.Marshal(v)
		if merr != nil {
			return nil, false
		}
		d, derr := canonical.Decode(raw)
		if derr != nil {
			return nil, false
		}
		return cedarValue(d) // d is a decoded value: this cannot come back here

	case err != nil:
		return nil, false
	}
	if i, ok := n.Scaled(0); ok {
		return types.Long(i), true
	}
	if i, ok := n.Scaled(4); ok {
		if d, err := types.NewDecimal(i, -4); err == nil {
			return d, true
		}
	}
	return types.String(n.String()), true
}
