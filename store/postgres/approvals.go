package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type approvals struct{ db *DB }

var _ store.Approvals = approvals{}

func (a approvals) Create(ctx context.Context, ap store.Approval) error {
	return sqlrow.CreateApproval(ap, func(created time.Time) error {
		_, err := a.db.pool.Exec(ctx, `
INSERT INTO approvals (id, server, tool, digest, summary, target, definition, status, created_at, expires_at, tenant, user_name)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11)`,
			ap.ID, ap.Server, ap.Tool, ap.Digest, ap.Summary, ap.Target, ap.Definition, store.UTC(created), store.UTC(ap.ExpiresAt),
			ap.Tenant, ap.User)
		return err
	}, isUnique)
}

// statusAt is an approval's status as of $1: a pending or granted request
// past its expiry reads as expired.
const statusAt = `CASE WHEN status IN ('pending', 'granted') AND expires_at <= $1::timestamptz THEN 'expired' ELSE status END`

var approvalColumns = sqlrow.ApprovalColumns(statusAt)

func scanApproval(row pgx.CollectableRow) (store.Approval, error) { return sqlrow.Approval(row, utc) }

func (a approvals) Get(ctx context.Context, id string) (store.Approval, error) {
	rows, err := a.db.pool.Query(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = $2`, now(), id)
	ap, err := one(rows, err, scanApproval)
	if err != nil {
		return store.Approval{}, found(err, "approval "+id, "approval "+id+": cannot read the store")
	}
	return ap, nil
}

func (a approvals) List(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	rows, err := a.db.pool.Query(ctx, `
SELECT `+approvalColumns+` FROM approvals
WHERE ($2 = '' OR tenant = $2) AND ($3 = '' OR user_name = $3) AND ($4 = '' OR `+statusAt+` = $4)
ORDER BY created_at, seq
LIMIT $5`,
		now(), f.Tenant, f.User, string(f.Status), limit(f.Limit))
	out, err := collect(rows, err, scanApproval)
	if err != nil {
		return nil, fmt.Errorf("list approvals: cannot read the store: %w", err)
	}
	return out, nil
}

func (a approvals) Decide(ctx context.Context, id string, grant bool, by, note string) error {
	update := func(status string) (int64, error) {
		tag, err := a.db.pool.Exec(ctx, `
UPDATE approvals SET status = $1, decided_by = $2, decided_at = $3, note = $4
WHERE id = $5 AND status = 'pending' AND (NOT $6 OR expires_at > $3)`,
			status, by, now(), note, id, grant)
		return tag.RowsAffected(), err
	}
	return sqlrow.Decide(id, grant, update, func() (store.Approval, error) { return a.Get(ctx, id) })
}

// Consume marks the oldest usable grant used in one statement. The grant is
// picked and locked with SKIP LOCKED, so that a caller racing for the same
// digest moves on to another grant (or none) instead of waiting; the outer
// status check holds even if the row changed after it was picked.
func (a approvals) Consume(ctx context.Context, digest, tenant, user string, at time.Time) (store.Approval, error) {
	rows, err := a.db.pool.Query(ctx, `
UPDATE approvals SET status = 'used', used_at = $1
WHERE status = 'granted' AND seq = (
	SELECT seq FROM approvals
	WHERE digest = $2 AND tenant = $3 AND user_name = $4 AND status = 'granted' AND expires_at > $1
	ORDER BY created_at, seq LIMIT 1
	FOR UPDATE SKIP LOCKED)
RETURNING `+approvalColumns,
		store.UTC(at), digest, tenant, user)
	ap, err := one(rows, err, scanApproval)
	if err != nil {
		return store.Approval{}, found(err, "no usable grant for this action", "use approval: cannot write the store")
	}
	return ap, nil
}

func (a approvals) Denial(ctx context.Context, digest, tenant, user string, since time.Time) (store.Approval, error) {
	rows, err := a.db.pool.Query(ctx, `
SELECT `+approvalColumns+` FROM approvals
WHERE digest = $2 AND tenant = $3 AND user_name = $4 AND status = 'denied' AND decided_at >= $5
ORDER BY decided_at DESC, seq DESC LIMIT 1`,
		now(), digest, tenant, user, store.UTC(since))
	ap, err := one(rows, err, scanApproval)
	if err != nil {
		return store.Approval{}, found(err, "no denial of this action", "denials: cannot read the store")
	}
	return ap, nil
}

func (a approvals) Remember(ctx context.Context, r store.AllowRule) error {
	return sqlrow.RememberRule(r, func(created time.Time) error {
		_, err := a.db.pool.Exec(ctx, `
INSERT INTO allow_rules (id, server, tool, definition, tenant, user_name, created_at, created_by, approval)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			r.ID, r.Server, r.Tool, r.Definition, r.Tenant, r.User, store.UTC(created), r.CreatedBy, r.Approval)
		return err
	}, isUnique)
}

func scanRule(row pgx.CollectableRow) (store.AllowRule, error) { return sqlrow.Rule(row, utc) }

func (a approvals) Rule(ctx context.Context, id string) (store.AllowRule, error) {
	return a.oneRule(ctx, "rule "+id, `id = $1`, id)
}

func (a approvals) Remembered(ctx context.Context, definition, tenant, user string) (store.AllowRule, error) {
	return a.oneRule(ctx, "no remembered rule for this tool", `definition = $1 AND tenant = $2 AND user_name = $3`, definition, tenant, user)
}

// oneRule returns the rule where selects; what names it in errors.
func (a approvals) oneRule(ctx context.Context, what, where string, args ...any) (store.AllowRule, error) {
	rows, err := a.db.pool.Query(ctx, `SELECT `+sqlrow.RuleColumns+` FROM allow_rules WHERE `+where, args...)
	r, err := one(rows, err, scanRule)
	if err != nil {
		return store.AllowRule{}, found(err, what, what+": cannot read the store")
	}
	return r, nil
}

func (a approvals) Rules(ctx context.Context, f store.RuleFilter) ([]store.AllowRule, error) {
	rows, err := a.db.pool.Query(ctx, `
SELECT `+sqlrow.RuleColumns+` FROM allow_rules
WHERE ($1 = '' OR tenant = $1) AND ($2 = '' OR user_name = $2)
ORDER BY created_at, seq`, f.Tenant, f.User)
	out, err := collect(rows, err, scanRule)
	if err != nil {
		return nil, fmt.Errorf("list rules: cannot read the store: %w", err)
	}
	return out, nil
}

func (a approvals) Forget(ctx context.Context, id string) error {
	tag, err := a.db.pool.Exec(ctx, `DELETE FROM allow_rules WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("forget rule %s: cannot write the store: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("rule %s: %w", id, store.ErrNotFound)
	}
	return nil
}
