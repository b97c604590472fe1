package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

// Input requests are rows of the table inputs: the request as JSON (ask),
// and beside it what selects and settles it.

var _ store.Inputs = (*DB)(nil)

// AskInput records a pending input request; see store.Inputs.
func (db *DB) AskInput(ctx context.Context, a store.InputAsk) error {
	ask, err := a.Request()
	if err != nil {
		return err
	}
	at := now()
	if !a.CreatedAt.IsZero() {
		at = store.UTC(a.CreatedAt)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record input request %s: %w", a.ID, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM inputs WHERE status <> 'pending' AND settled_at < ?`,
		micros(now().Add(-store.InputKeep))); err != nil {
		return fmt.Errorf("record input request %s: %w", a.ID, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO inputs (id, status, tenant, user_name, ask, created_at) VALUES (?, 'pending', ?, ?, ?, ?)`,
		a.ID, a.Tenant, a.User, string(ask), micros(at))
	if isUnique(err) {
		return fmt.Errorf("record input request %s: the id is taken: %w", a.ID, store.ErrConflict)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return fmt.Errorf("record input request %s: %w", a.ID, err)
	}
	return nil
}

func scanInput(row scanner) (store.InputAsk, error) { return sqlrow.Input(row, fromMicros) }

// InputAsk returns one input request; see store.Inputs.
func (db *DB) InputAsk(ctx context.Context, id string) (store.InputAsk, error) {
	a, err := scanInput(db.r.QueryRowContext(ctx, `SELECT `+sqlrow.InputColumns+` FROM inputs WHERE id = ?`, id))
	if err != nil {
		return store.InputAsk{}, found(err, "input request "+id, "read input request "+id)
	}
	return a, nil
}

// InputAsks lists input requests, oldest first; see store.Inputs.
func (db *DB) InputAsks(ctx context.Context, f store.InputFilter) ([]store.InputAsk, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+sqlrow.InputColumns+` FROM inputs
WHERE (?1 = '' OR status = ?1) AND (?2 = '' OR tenant = ?2) AND (?3 = '' OR user_name = ?3)
ORDER BY created_at, id`, string(f.Status), f.Tenant, f.User)
	if err != nil {
		return nil, fmt.Errorf("list input requests: %w", err)
	}
	return scanAll(rows, scanInput)
}

// AnswerInput settles a pending request as answered; see store.Inputs.
func (db *DB) AnswerInput(ctx context.Context, id string, answer json.RawMessage, by string) error {
	if !json.Valid(answer) {
		return fmt.Errorf("answer input request %s: the answer is not JSON", id)
	}
	return db.settleInput(ctx, "answer", id, store.InputAnswered, sql.NullString{String: string(answer), Valid: true}, sql.NullString{String: by, Valid: true})
}

// WithdrawInput settles a pending request as withdrawn; see store.Inputs.
func (db *DB) WithdrawInput(ctx context.Context, id string) error {
	return db.settleInput(ctx, "withdraw", id, store.InputWithdrawn, sql.NullString{}, sql.NullString{}) // nobody answered
}

func (db *DB) settleInput(ctx context.Context, verb, id string, to store.InputStatus, answer, by sql.NullString) error {
	update := func() (int64, error) {
		res, err := db.w.ExecContext(ctx, `UPDATE inputs SET status = ?, answer = ?, answered_by = ?, settled_at = ?, ask = json_remove(ask, '$.url') WHERE id = ? AND status = 'pending'`,
			string(to), answer, by, micros(now()), id)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	return sqlrow.SettleInput(verb, id, update, func() (store.InputAsk, error) { return db.InputAsk(ctx, id) })
}
