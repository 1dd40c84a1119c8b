package embedded

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/store"
)

// Decide records a verdict if, and only if, the request is still pending in
// the given round with the given payload hash and has not expired. The
// conditional status update picks the winner: deciders queue for the write
// lock, and every one after the first finds the request decided. On success
// it also writes the decision, the execution (on approve, ready, with the
// request's key and snapshot), the audit event and the card update.
func (s *Store) Decide(ctx context.Context, p store.DecideParams) (req store.Request, d store.Decision, decided bool, err error) {
	id, ok := canonicalID(p.RequestID)
	if !ok {
		return store.Request{}, store.Decision{}, false, nil
	}
	status := store.RequestRejected
	if p.Verdict == store.VerdictApprove {
		status = store.RequestApproved
	}
	err = s.write(ctx, func(tx *writeTx) error {
		at := micros(clock(p.Now))
		req, err = scanRequest(tx.QueryRowContext(ctx, `
UPDATE requests SET status = ?, updated_at = ?
WHERE id = ? AND round = ? AND payload_hash = ? AND status = 'pending' AND expires_at > ?
RETURNING `+requestColumns, status, at, id, p.Round, p.PayloadHash, at))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deciding request: %w", err)
		}
		tx.requestChanged(req.ID)
		d, err = scanDecision(tx.QueryRowContext(ctx, `
INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen, decided_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
RETURNING `+decisionColumns, req.ID, req.Round, p.Verdict, p.DecidedBy, p.Via, p.PayloadHash, at))
		if err != nil {
			return fmt.Errorf("recording decision: %w", err)
		}
		if p.Verdict == store.VerdictApprove {
			if _, err := tx.ExecContext(ctx, `
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts,
	approved_at, next_attempt_at, created_at, updated_at)
SELECT id, ?2, key, tool, snapshot, payload_hash, ?3, ?4, ?4, ?4, ?4 FROM requests WHERE id = ?1`,
				req.ID, d.ID, p.MaxAttempts, at); err != nil {
				return fmt.Errorf("creating execution: %w", translate(err))
			}
			tx.executionMoved(req.ID, string(store.ExecReady))
		}
		if err := appendEvent(ctx, tx, req.ID, d.DecidedAt, p.DecidedBy, "decided", map[string]any{
			"verdict": p.Verdict, "round": req.Round, "via": p.Via, "payload_hash_seen": p.PayloadHash,
		}); err != nil {
			return err
		}
		if err := enqueueOutbox(ctx, tx, store.OutboxUpdateCard, req.ID, req.Round, nil, d.DecidedAt); err != nil {
			return err
		}
		decided = true
		return nil
	})
	if err != nil || !decided {
		return store.Request{}, store.Decision{}, false, err
	}
	return req, d, true, nil
}

// DecisionFor returns the decision recorded for a request round.
func (s *Store) DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error) {
	id, _ := canonicalID(requestID)
	return scanDecision(s.reader.QueryRowContext(ctx,
		`SELECT `+decisionColumns+` FROM decisions WHERE request_id = ? AND round = ?`, id, round))
}

// LatestDecision returns the decision of the request's highest decided round.
func (s *Store) LatestDecision(ctx context.Context, requestID string) (store.Decision, error) {
	id, _ := canonicalID(requestID)
	return scanDecision(s.reader.QueryRowContext(ctx,
		`SELECT `+decisionColumns+` FROM decisions WHERE request_id = ? ORDER BY round DESC LIMIT 1`, id))
}

// decisionRound returns the round a decision was made in.
func decisionRound(ctx context.Context, q querier, decisionID int64) (int, error) {
	var round int
	if err := q.QueryRowContext(ctx, `SELECT round FROM decisions WHERE id = ?`, decisionID).Scan(&round); err != nil {
		return 0, fmt.Errorf("reading decision round: %w", translate(err))
	}
	return round, nil
}
