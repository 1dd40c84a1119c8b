package postgres

import (
	"context"

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
