package embedded

import (
	"context"

	"github.com/countersign/countersign/store"
)

// RequestsByKeyPrefix is a range scan on the key's unique index (BINARY
// collation is byte order). Keys are printable ASCII, so every key with the
// prefix sorts before prefix+DEL.
func (e executor) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("requests_by_key_prefix"), prefix, prefix+"\x7f", limit)
}

// RequestsByEffectString reads the effect_strings table.
func (e executor) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("requests_by_effect_string"), value, limit)
}

func (e executor) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("pending_requests"), limit)
}

func (e executor) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("recently_decided"), limit)
}

func (e executor) requests(ctx context.Context, query string, args ...any) ([]store.Request, error) {
	rows, err := e.read().QueryContext(ctx, query, args...)
	return collect("reading requests", scanRequest, rows, err)
}
