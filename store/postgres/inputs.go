package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

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
	var created any // NULL: now, by the server's clock
	if !a.CreatedAt.IsZero() {
		created = store.UTC(a.CreatedAt)
	}
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM inputs WHERE status <> 'pending' AND settled_at < now() - $1::interval`,
			store.InputKeep.String()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO inputs (id, status, tenant, user_name, ask, created_at)
VALUES ($1, 'pending', $2, $3, $4, COALESCE($5, now()))`, a.ID, a.Tenant, a.User, ask, created)
		return err
	})
	return inserted(err, "record input request "+a.ID+": the id is taken", "record input request "+a.ID)
}

func scanInput(row pgx.CollectableRow) (store.InputAsk, error) { return sqlrow.Input(row, utc) }

// InputAsk returns one input request; see store.Inputs.
func (db *DB) InputAsk(ctx context.Context, id string) (store.InputAsk, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.InputColumns+` FROM inputs WHERE id = $1`, id)
	a, err := one(rows, err, scanInput)
	if err != nil {
		return store.InputAsk{}, found(err, "input request "+id, "read input request "+id)
	}
	return a, nil
}

// InputAsks lists input requests, oldest first; see store.Inputs.
func (db *DB) InputAsks(ctx context.Context, f store.InputFilter) ([]store.InputAsk, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.InputColumns+` FROM inputs
WHERE ($1 = '' OR status = $1) AND ($2 = '' OR tenant = $2) AND ($3 = '' OR user_name = $3)
ORDER BY created_at, id`, string(f.Status), f.Tenant, f.User)
	out, err := collect(rows, err, scanInput)
	if err != nil {
		return nil, fmt.Errorf("list input requests: %w", err)
	}
	return out, nil
}

// AnswerInput settles a pending request as answered; see store.Inputs.
func (db *DB) AnswerInput(ctx context.Context, id string, answer json.RawMessage, by string) error {
	if !json.Valid(answer) {
		return fmt.Errorf("answer input request %s: the answer is not JSON", id)
	}
	return db.settleInput(ctx, "answer", id, store.InputAnswered, []byte(answer), &by)
}

// WithdrawInput settles a pending request as withdrawn; see store.Inputs.
func (db *DB) WithdrawInput(ctx context.Context, id string) error {
	return db.settleInput(ctx, "withdraw", id, store.InputWithdrawn, nil, nil)
}

func (db *DB) settleInput(ctx context.Context, verb, id string, to store.InputStatus, answer []byte, by *string) error {
	update := func() (int64, error) {
		tag, err := db.pool.Exec(ctx, `UPDATE inputs SET status = $1, answer = $2, answered_by = $3, settled_at = now(),
	ask = convert_to((convert_from(ask, 'UTF8')::jsonb - 'url')::text, 'UTF8')
WHERE id = $4 AND status = 'pending'`, string(to), answer, by, id)
		return tag.RowsAffected(), err
	}
	return sqlrow.SettleInput(verb, id, update, func() (store.InputAsk, error) { return db.InputAsk(ctx, id) })
}
