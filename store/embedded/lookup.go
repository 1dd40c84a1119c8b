package embedded

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/store"
)

// RequestsByKeyPrefix returns up to limit requests whose key starts with
// prefix, in key order: a range scan on the key's unique index (BINARY
// collation is byte order), so a prefix never becomes a LIKE pattern.
func (s *Store) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]store.Request, error) {
	// Keys are printable ASCII, so every key with the prefix sorts before prefix+DEL.
	return s.queryRequests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE key >= ? AND key < ? ORDER BY key LIMIT ?`, prefix, prefix+"\x7f", limit)
}

// RequestsByEffectString returns up to limit requests, newest first, whose
// effect holds value as a string at any depth (the effect_strings table).
func (s *Store) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	return s.queryRequests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE id IN (SELECT request_id FROM effect_strings WHERE value = ?) ORDER BY created_at DESC LIMIT ?`, value, limit)
}

// PendingRequests returns up to limit pending requests, soonest expiry first.
func (s *Store) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	return s.queryRequests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE status = 'pending' ORDER BY expires_at LIMIT ?`, limit)
}

// RecentlyDecided returns up to limit requests that left pending (decided,
// expired or cancelled), most recently changed first.
func (s *Store) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	return s.queryRequests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT ?`, limit)
}

// UnresolvedExecutions returns up to limit executions in unknown or
// needs_review, oldest change first, with their requests.
func (s *Store) UnresolvedExecutions(ctx context.Context, limit int) ([]store.Unresolved, error) {
	rows, err := s.reader.QueryContext(ctx, `
SELECT id FROM (
	SELECT * FROM (SELECT request_id AS id, updated_at FROM executions WHERE state = 'unknown' ORDER BY next_attempt_at LIMIT ?1)
	UNION ALL
	SELECT * FROM (SELECT request_id, updated_at FROM executions WHERE state = 'needs_review' ORDER BY updated_at LIMIT ?1)
) ORDER BY updated_at LIMIT ?1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing unresolved executions: %w", translate(err))
	}
	ids, err := collect(rows, func(row scanner) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("listing unresolved executions: %w", translate(err))
	}
	out := make([]store.Unresolved, 0, len(ids))
	for _, id := range ids {
		req, err := requestByID(ctx, s.reader, id)
		if err != nil {
			return nil, err
		}
		e, err := latestExecution(ctx, s.reader, id)
		if err != nil {
			return nil, err
		}
		out = append(out, store.Unresolved{Request: req, Execution: e})
	}
	return out, nil
}

func (s *Store) queryRequests(ctx context.Context, query string, args ...any) ([]store.Request, error) {
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading requests: %w", translate(err))
	}
	reqs, err := collect(rows, scanRequest)
	if err != nil {
		return nil, fmt.Errorf("reading requests: %w", translate(err))
	}
	return reqs, nil
}
