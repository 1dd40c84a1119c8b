package embedded

import (
	"context"
	"encoding/json"
	"math"

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

// ListRequests reads the agent's index (everyone's, for an admin) in
// listing order from the position it continues after, and filters.
func (e executor) ListRequests(ctx context.Context, p store.ListRequestsParams) ([]store.Request, error) {
	if p.Limit < 1 {
		return nil, nil
	}
	// The first page starts after a position later than any request, so the
	// index is always read as a range from where the page begins.
	afterAt, afterID := int64(math.MaxInt64), ""
	if p.After != nil {
		afterAt, afterID = micros(p.After.CreatedAt), canonicalID(p.After.ID)
	}
	query := q.Get("list_requests")
	if p.RequestedBy != "" {
		query = q.Get("list_requests_of")
	}
	statuses, approved, states := store.SettledRule()
	settledStatuses, err := json.Marshal(statuses)
	if err != nil {
		return nil, err
	}
	settledStates, err := json.Marshal(states)
	if err != nil {
		return nil, err
	}
	return e.requests(ctx, query, p.RequestedBy, string(p.Status), p.Tool, p.RunID, p.Settled, afterAt, afterID, p.Limit,
		string(settledStatuses), string(approved), string(settledStates))
}

func (e executor) requests(ctx context.Context, query string, args ...any) ([]store.Request, error) {
	rows, err := e.read().QueryContext(ctx, query, args...)
	return collect("reading requests", scanRequest, rows, err)
}
