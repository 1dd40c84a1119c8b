package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Verdict is a reviewer's answer; values equal the SQL values.
type Verdict string

// Verdicts.
const (
	VerdictApprove Verdict = "approve"
	VerdictReject  Verdict = "reject"
)

// Decision is the one verdict recorded for a request round.
type Decision struct {
	ID              int64     `db:"id"`
	RequestID       string    `db:"request_id"`
	Round           int       `db:"round"`
	Verdict         Verdict   `db:"verdict"`
	DecidedBy       string    `db:"decided_by"`
	Via             string    `db:"via"`
	PayloadHashSeen string    `db:"payload_hash_seen"`
	DecidedAt       time.Time `db:"decided_at"`
}

const decisionColumns = `id, request_id::text AS request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at`

// DecideParams describes a verdict to record.
type DecideParams struct {
	RequestID   string
	Round       int
	PayloadHash string // the hash the decider was shown
	Verdict     Verdict
	DecidedBy   string
	Via         string
	MaxAttempts int // the execution's attempt cap, on approve
	Now         *time.Time
}

// DecideTx records a verdict if, and only if, the request is still pending in
// the given round with the given payload hash and has not expired. The
// conditional status update is the single write that picks the winner; losers
// wait on its row lock and then find the request decided. On success it also
// writes the decision, the execution (on approve), the audit event and the
// card update. decided is false when the request was not in that state.
func DecideTx(ctx context.Context, tx pgx.Tx, p DecideParams) (req Request, d Decision, decided bool, err error) {
	status := RequestRejected
	if p.Verdict == VerdictApprove {
		status = RequestApproved
	}
	rows, err := tx.Query(ctx, `
UPDATE requests SET status = $4, updated_at = coalesce($5::timestamptz, now())
WHERE id = $1 AND round = $2 AND payload_hash = $3 AND status = 'pending'
	AND expires_at > coalesce($5::timestamptz, now())
RETURNING `+requestColumns, p.RequestID, p.Round, p.PayloadHash, status, p.Now)
	if err != nil {
		return Request{}, Decision{}, false, fmt.Errorf("deciding request: %w", err)
	}
	reqs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return Request{}, Decision{}, false, fmt.Errorf("deciding request: %w", translate(err))
	}
	if len(reqs) == 0 {
		return Request{}, Decision{}, false, nil
	}
	req = reqs[0]

	rows, err = tx.Query(ctx, `
INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING `+decisionColumns, req.ID, req.Round, p.Verdict, p.DecidedBy, p.Via, p.PayloadHash, req.UpdatedAt)
	if err != nil {
		return Request{}, Decision{}, false, fmt.Errorf("recording decision: %w", err)
	}
	d, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Decision])
	if err != nil {
		return Request{}, Decision{}, false, fmt.Errorf("recording decision: %w", translate(err))
	}

	if p.Verdict == VerdictApprove {
		if _, err := tx.Exec(ctx, `
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts, approved_at, next_attempt_at, created_at, updated_at)
SELECT id, $2, key, tool, snapshot, payload_hash, $3, $4, $4, $4, $4 FROM requests WHERE id = $1`,
			req.ID, d.ID, p.MaxAttempts, d.DecidedAt); err != nil {
			return Request{}, Decision{}, false, fmt.Errorf("creating execution: %w", translate(err))
		}
	}
	if err := AppendEventTx(ctx, tx, Event{
		RequestID: req.ID, At: d.DecidedAt, Actor: p.DecidedBy, Kind: "decided",
		Data: map[string]any{"verdict": p.Verdict, "round": req.Round, "via": p.Via, "payload_hash_seen": p.PayloadHash},
	}); err != nil {
		return Request{}, Decision{}, false, err
	}
	if err := EnqueueOutboxTx(ctx, tx, OutboxUpdateCard, req.ID, req.Round, nil, d.DecidedAt); err != nil {
		return Request{}, Decision{}, false, err
	}
	return req, d, true, nil
}

// DecisionFor returns the decision recorded for a request round.
func DecisionFor(ctx context.Context, db DBTX, requestID string, round int) (Decision, error) {
	rows, err := db.Query(ctx, `SELECT `+decisionColumns+` FROM decisions WHERE request_id = $1 AND round = $2`, requestID, round)
	if err != nil {
		return Decision{}, fmt.Errorf("reading decision: %w", err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Decision])
	return d, translate(err)
}

// LatestDecision returns the decision of the request's highest decided round.
func LatestDecision(ctx context.Context, db DBTX, requestID string) (Decision, error) {
	rows, err := db.Query(ctx, `SELECT `+decisionColumns+` FROM decisions WHERE request_id = $1 ORDER BY round DESC LIMIT 1`, requestID)
	if err != nil {
		return Decision{}, fmt.Errorf("reading decision: %w", err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Decision])
	return d, translate(err)
}
