package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ExpireClaims moves up to limit claims past their claim_expires_at to
// unknown, each with its audit event and card update, and returns how many
// moved. The worker that held such a claim may have sent the write or not;
// only the provider can say, so the row goes to verification, never straight
// back to ready.
func ExpireClaims(ctx context.Context, db DBTX, now *time.Time, limit int) (int, error) {
	var n int
	err := db.QueryRow(ctx, `
WITH due AS (
	SELECT id, claimed_by FROM executions
	WHERE state = 'claimed' AND claim_expires_at <= coalesce($1::timestamptz, now())
	ORDER BY claim_expires_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE executions e SET state = 'unknown', claimed_by = NULL, claim_expires_at = NULL,
		next_attempt_at = coalesce($1::timestamptz, now()),
		last_code = 'claim_timeout', last_error = 'the claim expired before an outcome was recorded',
		updated_at = coalesce($1::timestamptz, now())
	FROM due WHERE e.id = due.id AND e.state = 'claimed'
	RETURNING e.id, e.request_id, e.decision_id, e.attempts, e.updated_at, due.claimed_by AS held_by
), r AS (
	SELECT u.*, d.round FROM u JOIN decisions d ON d.id = u.decision_id
), ev AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT request_id, updated_at, 'executor:reconciler', 'unknown',
		jsonb_build_object('attempt', attempts, 'execution_id', id, 'code', 'claim_timeout', 'held_by', held_by)
	FROM r
), ob AS (
	INSERT INTO outbox (kind, request_id, round, next_attempt_at, created_at)
	SELECT 'update_card', request_id, round, updated_at, updated_at FROM r
)
SELECT count(*) FROM r`, now, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("expiring claims: %w", err)
	}
	return n, nil
}

// Unknown is an execution leased for verification, with the database clock.
type Unknown struct {
	Execution
	DBNow time.Time `db:"db_now"`
}

// LeaseUnknowns returns up to limit due unknown executions and pushes their
// next_attempt_at out by lease, so replicas reconciling at once verify each
// row once per lease. A lease is not a state change: it writes no event.
func LeaseUnknowns(ctx context.Context, db DBTX, now *time.Time, lease time.Duration, limit int) ([]Unknown, error) {
	rows, err := db.Query(ctx, `
WITH due AS (
	SELECT id FROM executions
	WHERE state = 'unknown' AND next_attempt_at <= coalesce($1::timestamptz, now())
	ORDER BY next_attempt_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE executions e SET next_attempt_at = coalesce($1::timestamptz, now()) + $2::bigint * interval '1 microsecond'
	FROM due WHERE e.id = due.id AND e.state = 'unknown'
	RETURNING e.*
)
SELECT `+ExecutionColumns+`, coalesce($1::timestamptz, now()) AS db_now FROM u`, now, lease.Microseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("leasing unknown executions: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Unknown])
	if err != nil {
		return nil, fmt.Errorf("leasing unknown executions: %w", translate(err))
	}
	return out, nil
}

// CountUnsettled returns how many executions are unknown and how many wait
// for a human; each count reads only its partial index.
func CountUnsettled(ctx context.Context, db DBTX) (unknown, needsReview int, err error) {
	err = db.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM executions WHERE state = 'unknown'),
	(SELECT count(*) FROM executions WHERE state = 'needs_review')`).Scan(&unknown, &needsReview)
	if err != nil {
		return 0, 0, fmt.Errorf("counting unsettled executions: %w", err)
	}
	return unknown, needsReview, nil
}
