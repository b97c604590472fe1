package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
	"github.com/airlockhq/airlock/store/internal/sqlrow"
)

type approvals struct{ db *DB }

var _ store.Approvals = approvals{}

func (a approvals) Create(ctx context.Context, ap store.Approval) error {
	return sqlrow.CreateApproval(ap, func(created time.Time) error {
		_, err := a.db.w.ExecContext(ctx, `
INSERT INTO approvals (id, server, tool, digest, summary, target, definition, status, created_at, expires_at, tenant, user_name)
VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?)`,
			ap.ID, ap.Server, ap.Tool, ap.Digest, ap.Summary, ap.Target, ap.Definition, micros(created), micros(ap.ExpiresAt), ap.Tenant, ap.User)
		return err
	}, isUnique)
}

// statusAt is an approval's status as of ?1 (microseconds): a pending or
// granted request past its expiry reads as expired.
const statusAt = `CASE WHEN status IN ('pending', 'granted') AND expires_at <= ?1 THEN 'expired' ELSE status END`

var approvalColumns = sqlrow.ApprovalColumns(statusAt)

func scanApproval(row scanner) (store.Approval, error) { return sqlrow.Approval(row, fromMicros) }

func (a approvals) Get(ctx context.Context, id string) (store.Approval, error) {
	ap, err := scanApproval(a.db.r.QueryRowContext(ctx,
		`SELECT `+approvalColumns+` FROM approvals WHERE id = ?2`, micros(now()), id))
	if err != nil {
		return store.Approval{}, found(err, "approval "+id, "approval "+id+": cannot read the store")
	}
	return ap, nil
}

func (a approvals) List(ctx context.Context, f store.ApprovalFilter) ([]store.Approval, error) {
	out, err := queryAll(ctx, a.db.r, scanApproval, `
SELECT `+approvalColumns+` FROM approvals
WHERE (?2 = '' OR tenant = ?2) AND (?3 = '' OR user_name = ?3) AND (?4 = '' OR `+statusAt+` = ?4)
ORDER BY created_at, seq
LIMIT ?5`,
		micros(now()), f.Tenant, f.User, string(f.Status), limit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("list approvals: cannot read the store: %w", err)
	}
	return out, nil
}

func (a approvals) Decide(ctx context.Context, id string, grant bool, by, note string) error {
	update := func(status string) (int64, error) {
		at := micros(now())
		res, err := a.db.w.ExecContext(ctx, `
UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, note = ?
WHERE id = ? AND status = 'pending' AND (NOT ? OR expires_at > ?)`,
			status, by, at, note, id, grant, at)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	return sqlrow.Decide(id, grant, update, func() (store.Approval, error) { return a.Get(ctx, id) })
}

func (a approvals) Consume(ctx context.Context, digest, tenant, user string, at time.Time) (store.Approval, error) {
	// One statement: SQLite runs it under the write lock, so the grant it
	// picks cannot be picked by anyone else.
	at = store.UTC(at)
	ap, err := scanApproval(a.db.w.QueryRowContext(ctx, `
UPDATE approvals SET status = 'used', used_at = ?1
WHERE seq = (
	SELECT seq FROM approvals
	WHERE digest = ?2 AND tenant = ?3 AND user_name = ?4 AND status = 'granted' AND expires_at > ?1
	ORDER BY created_at, seq LIMIT 1)
RETURNING `+approvalColumns,
		micros(at), digest, tenant, user))
	if err != nil {
		return store.Approval{}, found(err, "no usable grant for this action", "use approval: cannot write the store")
	}
	return ap, nil
}

func (a approvals) Denial(ctx context.Context, digest, tenant, user string, since time.Time) (store.Approval, error) {
	ap, err := scanApproval(a.db.r.QueryRowContext(ctx, `
SELECT `+approvalColumns+` FROM approvals
WHERE digest = ?2 AND tenant = ?3 AND user_name = ?4 AND status = 'denied' AND decided_at >= ?5
ORDER BY decided_at DESC, seq DESC LIMIT 1`,
		micros(now()), digest, tenant, user, micros(since)))
	if err != nil {
		return store.Approval{}, found(err, "no denial of this action", "denials: cannot read the store")
	}
	return ap, nil
}

func (a approvals) Remember(ctx context.Context, r store.AllowRule) error {
	return sqlrow.RememberRule(r, func(created time.Time) error {
		_, err := a.db.w.ExecContext(ctx, `
INSERT INTO allow_rules (id, server, tool, definition, tenant, user_name, created_at, created_by, approval)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Server, r.Tool, r.Definition, r.Tenant, r.User, micros(created), r.CreatedBy, r.Approval)
		return err
	}, isUnique)
}

func scanRule(row scanner) (store.AllowRule, error) { return sqlrow.Rule(row, fromMicros) }

func (a approvals) Rule(ctx context.Context, id string) (store.AllowRule, error) {
	return a.oneRule(ctx, "rule "+id, `id = ?`, id)
}

func (a approvals) Remembered(ctx context.Context, definition, tenant, user string) (store.AllowRule, error) {
	return a.oneRule(ctx, "no remembered rule for this tool", `definition = ? AND tenant = ? AND user_name = ?`, definition, tenant, user)
}

// oneRule returns the rule where selects; what names it in errors.
func (a approvals) oneRule(ctx context.Context, what, where string, args ...any) (store.AllowRule, error) {
	r, err := scanRule(a.db.r.QueryRowContext(ctx, `SELECT `+sqlrow.RuleColumns+` FROM allow_rules WHERE `+where, args...))
	if err != nil {
		return store.AllowRule{}, found(err, what, what+": cannot read the store")
	}
	return r, nil
}

func (a approvals) Rules(ctx context.Context, f store.RuleFilter) ([]store.AllowRule, error) {
	out, err := queryAll(ctx, a.db.r, scanRule, `
SELECT `+sqlrow.RuleColumns+` FROM allow_rules
WHERE (?1 = '' OR tenant = ?1) AND (?2 = '' OR user_name = ?2)
ORDER BY created_at, seq`, f.Tenant, f.User)
	if err != nil {
		return nil, fmt.Errorf("list rules: cannot read the store: %w", err)
	}
	return out, nil
}

func (a approvals) Forget(ctx context.Context, id string) error {
	res, err := a.db.w.ExecContext(ctx, `DELETE FROM allow_rules WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("forget rule %s: cannot write the store: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("rule %s: %w", id, store.ErrNotFound)
	}
	return nil
}
