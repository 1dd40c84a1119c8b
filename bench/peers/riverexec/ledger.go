package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// The -ledger mode: River whose worker keeps the records countersign keeps,
// as a River user would. Each transition updates the request row (bumping
// its version), appends an audit event and queues a card update, in one
// statement; the claim is recorded before the send, and the outcome is
// recorded in the transaction that completes the job (JobCompleteTx).

// ledgerSchema is what a River user keeps beside the queue to show reviewers
// and auditors what happened: the request's state, its audit trail, and the
// card updates a Slack sender drains.
const ledgerSchema = `
CREATE TABLE IF NOT EXISTS peer_requests (
  id bigserial PRIMARY KEY, key text NOT NULL UNIQUE, status text NOT NULL,
  version int NOT NULL DEFAULT 1, updated_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS peer_events (
  id bigserial PRIMARY KEY, request_id bigint NOT NULL REFERENCES peer_requests (id),
  kind text NOT NULL, data jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now());
CREATE INDEX IF NOT EXISTS peer_events_request ON peer_events (request_id, id);
CREATE TABLE IF NOT EXISTS peer_outbox (
  id bigserial PRIMARY KEY, request_id bigint NOT NULL REFERENCES peer_requests (id),
  kind text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
TRUNCATE peer_outbox, peer_events, peer_requests;`

// transition moves the peer's request row to state and appends its audit
// event and a card update to the outbox, in one statement.
const transition = `WITH r AS (
  UPDATE peer_requests SET status = $2, version = version + 1, updated_at = now() WHERE id = $1 RETURNING id
), e AS (
  INSERT INTO peer_events (request_id, kind, data) SELECT id, $2, jsonb_build_object('attempt', $3::int) FROM r
)
INSERT INTO peer_outbox (request_id, kind) SELECT id, 'card_update' FROM r`

// recordClaim is the write-ahead claim: recorded before anything is sent.
func recordClaim(ctx context.Context, pool *pgxpool.Pool, job *river.Job[DispatchArgs]) error {
	_, err := pool.Exec(ctx, transition, job.Args.RequestID, "claimed", job.Attempt)
	return err
}

// recordOutcome records the outcome and completes the job in one transaction.
func recordOutcome(ctx context.Context, pool *pgxpool.Pool, job *river.Job[DispatchArgs]) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, transition, job.Args.RequestID, "succeeded", job.Attempt); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// insertRequests stores n approved requests and returns their ids in order.
func insertRequests(ctx context.Context, pool *pgxpool.Pool, prefix string, n int) ([]int64, error) {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	rows, err := pool.Query(ctx, `INSERT INTO peer_requests (key, status)
SELECT k, 'approved' FROM unnest($1::text[]) WITH ORDINALITY AS t (k, n) ORDER BY n RETURNING id`, keys)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// insertApproved is the approval of one request: its row and its job in one
// transaction, as a River user would enqueue the write on approval.
func insertApproved(ctx context.Context, pool *pgxpool.Pool, client *river.Client[pgx.Tx], args DispatchArgs) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := tx.QueryRow(ctx, `INSERT INTO peer_requests (key, status) VALUES ($1, 'approved') RETURNING id`, args.Key).Scan(&args.RequestID); err != nil {
		return err
	}
	if _, err := client.InsertTx(ctx, tx, args, nil); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
