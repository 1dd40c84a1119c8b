package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

// RequestsByKeyPrefix is a range scan on the key's unique index (byte
// order, C collation). Keys are printable ASCII, so every key with the
// prefix sorts before prefix+DEL.
func (e executor) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("requests_by_key_prefix"), prefix, prefix+"\x7f", limit)
	return collect[store.Request]("reading requests", rows, err)
}

// RequestsByEffectString reads the GIN index on effect_strings.
func (e executor) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("requests_by_effect_string"), value, limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("pending_requests"), limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("recently_decided"), limit)
	return collect[store.Request]("reading requests", rows, err)
}

// ListRequests runs list_requests through an unnamed statement
// (QueryExecModeCacheDescribe), which PostgreSQL plans for the arguments it
// is given each time. A cached prepared statement would soon get one
// generic plan, for which every optional filter is unknown and no index
// can be chosen for it.
func (e executor) ListRequests(ctx context.Context, p store.ListRequestsParams) ([]store.Request, error) {
	if p.Limit < 1 {
		return nil, nil
	}
	var afterAt *time.Time
	var afterID *string
	if p.After != nil {
		afterAt, afterID = &p.After.CreatedAt, &p.After.ID
	}
	statuses, approved, states := store.SettledRule()
	rows, err := e.db.Query(ctx, q.Get("list_requests"), pgx.QueryExecModeCacheDescribe,
		p.RequestedBy, string(p.Status), p.Tool, p.RunID, p.Settled, afterAt, afterID, p.Limit,
		statuses, string(approved), states)
	return collect[store.Request]("listing requests", rows, err)
}
