package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/store"
)

type toolLists struct{ db *DB }

var _ store.ToolLists = toolLists{}

func (c toolLists) Get(ctx context.Context, key string, now time.Time) (store.ToolList, error) {
	var (
		l         store.ToolList
		tools     string
		expiresAt *time.Time
	)
	err := c.db.pool.QueryRow(ctx, `SELECT key, tools, hash, fetched_at, expires_at FROM tool_lists WHERE key = $1`, key).
		Scan(&l.Key, &tools, &l.Hash, &l.FetchedAt, &expiresAt)
	if err != nil {
		return store.ToolList{}, found(err, "tool list "+key, "read the tool list cache")
	}
	l.Tools, l.FetchedAt = []byte(tools), l.FetchedAt.UTC()
	if expiresAt != nil {
		l.ExpiresAt = expiresAt.UTC()
	}
	return l.Unexpired(now)
}

func (c toolLists) Put(ctx context.Context, l store.ToolList) error {
	fetched, err := l.Fetched(time.Now())
	if err != nil {
		return err
	}
	var expires *time.Time
	if !l.ExpiresAt.IsZero() {
		t := store.UTC(l.ExpiresAt)
		expires = &t
	}
	_, err = c.db.pool.Exec(ctx, `
INSERT INTO tool_lists (key, tools, hash, fetched_at, expires_at) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (key) DO UPDATE SET tools = excluded.tools, hash = excluded.hash,
	fetched_at = excluded.fetched_at, expires_at = excluded.expires_at`,
		l.Key, string(l.Tools), l.Hash, store.UTC(fetched), expires)
	if err != nil {
		return fmt.Errorf("write the tool list cache: %w", err)
	}
	return nil
}

func (c toolLists) Delete(ctx context.Context, key string) error {
	if _, err := c.db.pool.Exec(ctx, `DELETE FROM tool_lists WHERE key = $1`, key); err != nil {
		return fmt.Errorf("write the tool list cache: %w", err)
	}
	return nil
}
