package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// An InputAsk is a server's question to a person during a call (a
// form-mode or URL-mode elicitation), kept while the host asks it, so that
// the person may answer it elsewhere: the operator console shows what is
// pending and answers it, and the asking host takes the first answer,
// its own person's or the console's.
type InputAsk struct {
	ID     string `json:"id"`   // the request's id (InputRequest.ID, "inq_…")
	Call   string `json:"call"` // the call it was asked during: its audit events' "call"
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Tenant and User are whom the call is made for: only they (or an
	// operator) see and answer it.
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	// Mode is "form" or "url"; Message is the server's words; Schema is
	// the form's requested schema; URL and Domain the link of a URL-mode
	// request.
	Mode    string          `json:"mode"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
	URL     string          `json:"url,omitempty"`
	Domain  string          `json:"domain,omitempty"`
	// Round is the question's number in its call; Problem says why the
	// last answer to it did not fit the form.
	Round   int    `json:"round"`
	Problem string `json:"problem,omitempty"`
	// Asker names the process that asks, "HOST/PID/START", so that a
	// question whose process ended can be told from one that waits; ""
	// where it cannot be said.
	Asker string `json:"asker,omitempty"`

	Status InputStatus `json:"status"`
	// Answer is the answer given elsewhere, as JSON ({"action": …,
	// "content": {…}}), once Status is InputAnswered by AnswerInput.
	Answer     json.RawMessage `json:"answer,omitempty"`
	AnsweredBy string          `json:"answered_by,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	SettledAt  time.Time       `json:"settled_at,omitzero"`
}

// InputStatus is where an InputAsk stands.
type InputStatus string

const (
	// InputPending: the host is asking; an answer may be given.
	InputPending InputStatus = "pending"
	// InputAnswered: answered elsewhere (AnswerInput); the host takes it.
	InputAnswered InputStatus = "answered"
	// InputWithdrawn: answered by the host's own person, or the call ended.
	InputWithdrawn InputStatus = "withdrawn"
)

// Check reports what is wrong with an InputAsk to be recorded.
func (a InputAsk) Check() error {
	switch {
	case a.ID == "":
		return fmt.Errorf("an input request without an id")
	case a.Mode != "form" && a.Mode != "url":
		return fmt.Errorf("input request %s: mode %q, not form or url", a.ID, a.Mode)
	case len(a.Schema) > 0 && !json.Valid(a.Schema):
		return fmt.Errorf("input request %s: its schema is not JSON", a.ID)
	}
	return nil
}

// An InputFilter selects input requests: of one status, tenant and user
// ("" for any).
type InputFilter struct {
	Status InputStatus
	Tenant string
	User   string
}

// InputKeep is how long a settled input request is kept before a later
// AskInput removes it.
const InputKeep = 24 * time.Hour

// Inputs keeps the questions servers ask people during calls while they
// are asked (InputAsk). A store that implements it lets the operator
// console answer them.
type Inputs interface {
	// AskInput records a as pending (a.Status is ignored; a zero
	// CreatedAt is now), and removes requests settled more than InputKeep
	// ago. A taken id is ErrConflict.
	AskInput(ctx context.Context, a InputAsk) error
	// InputAsk returns the request id, or ErrNotFound.
	InputAsk(ctx context.Context, id string) (InputAsk, error)
	// InputAsks returns the requests f selects, oldest first.
	InputAsks(ctx context.Context, f InputFilter) ([]InputAsk, error)
	// AnswerInput settles a pending request as answered with answer (JSON)
	// by whom. A request that is not pending is ErrConflict; an unknown
	// id ErrNotFound.
	AnswerInput(ctx context.Context, id string, answer json.RawMessage, by string) error
	// WithdrawInput settles a pending request as withdrawn: the host's
	// own person answered, or the call ended. A request that is not
	// pending is ErrConflict (answered elsewhere first); an unknown id
	// ErrNotFound.
	WithdrawInput(ctx context.Context, id string) error
}

// Request is what a backend keeps of a as JSON beside the columns that
// select and settle it: a checked, without its status and settlement.
func (a InputAsk) Request() ([]byte, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	a.Status, a.Answer, a.AnsweredBy, a.CreatedAt, a.SettledAt = "", nil, "", time.Time{}, time.Time{}
	return json.Marshal(a)
}
