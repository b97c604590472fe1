package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

type toolLists struct{ db *DB }

var _ store.ToolLists = toolLists{}

// ToolLists returns the cache of tool lists.
func (db *DB) ToolLists() store.ToolLists { return toolLists{db} }

func (c toolLists) Get(ctx context.Context, key string, now time.Time) (store.ToolList, error) {
	var (
		l                  store.ToolList
		tools              string
		fetched, expiresAt int64
	)
	err := c.db.r.QueryRowContext(ctx, `SELECT key, tools, hash, fetched_at, expires_at FROM tool_lists WHERE key = ?`, key).
		Scan(&l.Key, &tools, &l.Hash, &fetched, &expiresAt)
	if err != nil {
		return store.ToolList{}, found(err, "tool list "+key, "read the tool list cache")
	}
	l.Tools, l.FetchedAt = []byte(tools), fromMicros(fetched)
	if expiresAt != 0 {
		l.ExpiresAt = fromMicros(expiresAt)
	}
	return l.Unexpired(now)
}

func (c toolLists) Put(ctx context.Context, l store.ToolList) error {
	fetched, err := l.Fetched(time.Now())
	if err != nil {
		return err
	}
	var expires int64
	if !l.ExpiresAt.IsZero() {
		expires = micros(l.ExpiresAt)
	}
	_, err = c.db.w.ExecContext(ctx, `
INSERT INTO tool_lists (key, tools, hash, fetched_at, expires_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET tools = excluded.tools, hash = excluded.hash,
	fetched_at = excluded.fetched_at, expires_at = excluded.expires_at`,
		l.Key, string(l.Tools), l.Hash, micros(fetched), expires)
	if err != nil {
		return fmt.Errorf("write the tool list cache: %w", err)
	}
	return nil
}

func (c toolLists) Delete(ctx context.Context, key string) error {
	if _, err := c.db.w.ExecContext(ctx, `DELETE FROM tool_lists WHERE key = ?`, key); err != nil {
		return fmt.Errorf("write the tool list cache: %w", err)
	}
	return nil
}
