package console

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/store"
)

// fieldPrefix starts the name of a form's field in the page's HTML form,
// apart from the page's own inputs (csrf, action).
const fieldPrefix = "f."

// An inputView is one question a server asks during a call, as the inputs
// page shows it: its form's fields, or why the form cannot be shown, and,
// after an answer that did not fit, what was wrong and what was typed.
type inputView struct {
	store.InputAsk
	Fields  []fieldView
	Broken  string // why the form cannot be shown
	Problem string // what was wrong with the answer just given here
}

// A fieldView is one field of a form, as an HTML input.
type fieldView struct {
	airlock.FormField
	Input   string   // the HTML name of its input
	Value   string   // what the input holds: the typed answer, else the default
	Checked []string // a list's choices that are checked
}

// Picks reports whether choice is the field's value or one of its
// checked choices.
func (f fieldView) Picks(choice string) bool {
	if f.Multi {
		return slices.Contains(f.Checked, choice)
	}
	return f.Value == choice
}

type inputsData struct {
	Requests []inputView
}

func (c *Console) inputs(w http.ResponseWriter, r *http.Request) {
	c.showInputs(w, r, "", "", nil)
}

// showInputs writes the inputs page; failed names the request whose
// answer did not fit, problem says why, and typed is what was typed.
func (c *Console) showInputs(w http.ResponseWriter, r *http.Request, failed, problem string, typed url.Values) {
	list, err := c.listInputs(r)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	var d inputsData
	for _, a := range slices.Backward(list) { // newest first
		v := inputView{InputAsk: a}
		fields, err := airlock.FormFields(a.Schema)
		if err != nil {
			v.Broken = printable(err.Error(), 500)
		}
		for _, f := range fields {
			fv := fieldView{FormField: f, Input: fieldPrefix + f.Name}
			if f.HasDefault {
				fv.Value = defaultText(f.Default)
				if list, ok := f.Default.([]any); ok {
					for _, x := range list {
						fv.Checked = append(fv.Checked, fmt.Sprint(x))
					}
				}
			}
			if a.ID == failed {
				fv.Value, fv.Checked = typed.Get(fv.Input), typed[fv.Input]
			}
			v.Fields = append(v.Fields, fv)
		}
		if a.ID == failed {
			v.Problem = problem
		}
		d.Requests = append(d.Requests, v)
	}
	status := http.StatusOK
	if failed != "" {
		status = http.StatusBadRequest
	}
	c.renderStatus(w, r, status, "inputs", "Input requests", d)
}

// defaultText is a field's default as its input holds it.
func defaultText(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// listInputs lists the pending questions the viewer may answer, oldest
// first.
func (c *Console) listInputs(r *http.Request) ([]store.InputAsk, error) {
	ctx, cancel := pageContext(r)
	defer cancel()
	return airlock.ListInputs(ctx, c.opts.Store, store.InputFilter{Status: store.InputPending}, c.actor(r))
}

func (c *Console) watchInputs(_ context.Context, r *http.Request, h hash.Hash) error {
	list, err := c.listInputs(r)
	for _, a := range list {
		fmt.Fprintln(h, a.ID, a.Status)
	}
	return err
}

// answer takes the answer to a question: accept with the form's fields,
// decline or cancel. An answer that does not fit the form is shown again,
// as typed, with what is wrong.
func (c *Console) answer(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	id, as := r.PathValue("id"), c.actor(r)
	a, err := airlock.InputAskFor(ctx, c.opts.Store, id, as)
	if err != nil {
		c.storeFailed(w, r, err)
		return
	}
	ans := &airlock.InputAnswer{Action: r.PostForm.Get("action")}
	switch ans.Action {
	case airlock.AnswerAccept:
		if a.Mode == airlock.ElicitForm {
			if ans.Content, err = formContent(a, r.PostForm); err != nil {
				c.showInputs(w, r, id, printable(err.Error(), 500), r.PostForm)
				return
			}
		}
	case airlock.AnswerDecline, airlock.AnswerCancel:
	default:
		c.fail(w, r, http.StatusBadRequest, "Answer accept, decline or cancel.")
		return
	}
	err = airlock.AnswerInput(ctx, c.opts.Store, id, ans, as)
	switch {
	case errors.Is(err, airlock.ErrAnswerDoesNotFit):
		why := strings.TrimPrefix(err.Error(), airlock.ErrAnswerDoesNotFit.Error()+": ")
		c.showInputs(w, r, id, printable(why, 500), r.PostForm)
		return
	case err != nil:
		c.storeFailed(w, r, err)
		return
	}
	msg := map[string]string{
		airlock.AnswerAccept:  "Answered %s: the server is sent your answer.",
		airlock.AnswerDecline: "Declined %s: the server is told you will not answer.",
		airlock.AnswerCancel:  "Cancelled %s: the server is told the question was dismissed.",
	}[ans.Action]
	c.done(w, r, Prefix+"inputs", fmt.Sprintf(msg, id))
}

// formContent reads a form's fields from the page's form: a field left
// empty is left out (the host gives it its default, or the check says it
// is required), a list is its checked choices.
func formContent(a store.InputAsk, form url.Values) (map[string]any, error) {
	fields, err := airlock.FormFields(a.Schema)
	if err != nil {
		return nil, fmt.Errorf("the form cannot be read: %v", err)
	}
	content := map[string]any{}
	for _, f := range fields {
		name := fieldPrefix + f.Name
		if f.Multi {
			picked := []any{}
			for _, v := range form[name] {
				if !isChoice(f, v) {
					return nil, fmt.Errorf("%s: %q is not one of its choices", f.Name, v)
				}
				picked = append(picked, v)
			}
			if len(picked) > 0 || f.Required {
				content[f.Name] = picked
			}
			continue
		}
		text := form.Get(name)
		if f.Kind != "string" {
			text = strings.TrimSpace(text)
		}
		if text == "" {
			continue
		}
		switch {
		case len(f.Choices) > 0:
			if !isChoice(f, text) {
				return nil, fmt.Errorf("%s: %q is not one of its choices", f.Name, text)
			}
			content[f.Name] = text
		case f.Kind == "string" || f.Kind == "":
			content[f.Name] = text
		default:
			v, err := f.Parse(text)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", f.Name, err)
			}
			content[f.Name] = v
		}
	}
	return content, nil
}

func isChoice(f airlock.FormField, v string) bool {
	return slices.ContainsFunc(f.Choices, func(c airlock.FormChoice) bool { return c.Value == v })
}
