package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RequestsByKeyPrefix returns up to limit requests whose key starts with
// prefix, in key order. It is a range scan on the key's unique index (byte
// order, C collation), so a prefix never becomes a LIKE pattern.
func RequestsByKeyPrefix(ctx context.Context, db DBTX, prefix string, limit int) ([]Request, error) {
	if holdsNUL(prefix) {
		return nil, nil
	}
	// Keys are printable ASCII, so every key with the prefix sorts before prefix+DEL.
	return queryRequests(ctx, db, `SELECT `+requestColumns+` FROM requests
WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3`, prefix, prefix+"\x7f", limit)
}

// RequestsByEffectString returns up to limit requests, newest first, whose
// effect holds value as a string at any depth (EffectStrings, stored at
// intake and GIN-indexed).
func RequestsByEffectString(ctx context.Context, db DBTX, value string, limit int) ([]Request, error) {
	if holdsNUL(value) {
		return nil, nil
	}
	return queryRequests(ctx, db, `SELECT `+requestColumns+` FROM requests
WHERE effect_strings @> ARRAY[$1::text] ORDER BY created_at DESC LIMIT $2`, value, limit)
}

// PendingRequests returns up to limit pending requests, soonest expiry first.
func PendingRequests(ctx context.Context, db DBTX, limit int) ([]Request, error) {
	return queryRequests(ctx, db, `SELECT `+requestColumns+` FROM requests
WHERE status = 'pending' ORDER BY expires_at LIMIT $1`, limit)
}

// RecentlyDecided returns up to limit requests that left pending (decided,
// expired or cancelled), most recently changed first.
func RecentlyDecided(ctx context.Context, db DBTX, limit int) ([]Request, error) {
	return queryRequests(ctx, db, `SELECT `+requestColumns+` FROM requests
WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT $1`, limit)
}

// Unresolved is a request whose write is in doubt: its execution is unknown
// (being reconciled) or needs a human.
type Unresolved struct {
	Request   Request
	Execution Execution
}

// UnresolvedExecutions returns up to limit executions in unknown or
// needs_review, oldest change first, with their requests.
func UnresolvedExecutions(ctx context.Context, db DBTX, limit int) ([]Unresolved, error) {
	rows, err := db.Query(ctx, `
SELECT id::text FROM (
	(SELECT request_id AS id, updated_at FROM executions WHERE state = 'unknown' ORDER BY next_attempt_at LIMIT $1)
	UNION ALL
	(SELECT request_id, updated_at FROM executions WHERE state = 'needs_review' ORDER BY updated_at LIMIT $1)
) u ORDER BY updated_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing unresolved executions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing unresolved executions: %w", err)
	}
	out := make([]Unresolved, 0, len(ids))
	for _, id := range ids {
		req, err := RequestByID(ctx, db, id)
		if err != nil {
			return nil, err
		}
		e, err := LatestExecution(ctx, db, id)
		if err != nil {
			return nil, err
		}
		out = append(out, Unresolved{Request: req, Execution: e})
	}
	return out, nil
}

// ExecutionsFor returns every execution of a request, oldest first.
func ExecutionsFor(ctx context.Context, db DBTX, requestID string) ([]Execution, error) {
	rows, err := db.Query(ctx, `SELECT `+ExecutionColumns+` FROM executions WHERE request_id = $1 ORDER BY id`, requestID)
	if err != nil {
		return nil, fmt.Errorf("reading executions: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Execution])
	if err != nil {
		return nil, fmt.Errorf("reading executions: %w", translate(err))
	}
	return out, nil
}

func queryRequests(ctx context.Context, db DBTX, sql string, args ...any) ([]Request, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("reading requests: %w", err)
	}
	reqs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return nil, fmt.Errorf("reading requests: %w", translate(err))
	}
	return reqs, nil
}
