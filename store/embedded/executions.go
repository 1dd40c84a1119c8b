package embedded

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertExecution(ctx context.Context, x store.NewExecution) error {
	return e.write(ctx, func(tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, `
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts,
	approved_at, next_attempt_at, created_at, updated_at)
SELECT id, ?2, key, tool, snapshot, payload_hash, ?3, ?4, ?4, ?4, ?4 FROM requests WHERE id = ?1`,
			canonicalID(x.RequestID), x.DecisionID, x.MaxAttempts, micros(x.At)); err != nil {
			return wrap("creating execution", err)
		}
		tx.executionMoved(canonicalID(x.RequestID), store.ExecReady)
		return nil
	})
}

func (e executor) LatestExecution(ctx context.Context, requestID string) (store.Execution, error) {
	return scanExecution(e.read().QueryRowContext(ctx,
		`SELECT `+executionColumns+` FROM executions WHERE request_id = ? ORDER BY id DESC LIMIT 1`, canonicalID(requestID)))
}

func (e executor) ExecutionsFor(ctx context.Context, requestID string) ([]store.Execution, error) {
	rows, err := e.read().QueryContext(ctx, `SELECT `+executionColumns+` FROM executions WHERE request_id = ? ORDER BY id`, canonicalID(requestID))
	if err != nil {
		return nil, wrap("reading executions", err)
	}
	out, err := collect(rows, scanExecution)
	return out, wrap("reading executions", err)
}

func (e executor) ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error) {
	return scanExecution(e.read().QueryRowContext(ctx,
		`SELECT `+executionColumns+` FROM executions WHERE decision_id = ? ORDER BY id DESC LIMIT 1`, decisionID))
}

func (e executor) ExecutionExists(ctx context.Context, id int64, requestID string) (bool, error) {
	var exists bool
	err := e.read().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM executions WHERE id = ? AND request_id = ?)`,
		id, canonicalID(requestID)).Scan(&exists)
	return exists, wrap("reading execution", err)
}

// decisionRound is the SQL of the round of the row's decision.
const decisionRound = `(SELECT d.round FROM decisions d WHERE d.id = decision_id)`

// ClaimExecutionRows selects and updates in one IMMEDIATE transaction, so
// no other claimer (in this process or another) commits in between: a row
// is handed to one caller only.
func (e executor) ClaimExecutionRows(ctx context.Context, p store.ClaimParams) (claims []store.Claim, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		claims = nil
		now := tx.clock(p.Now)
		args, marks := []any{micros(now), p.Limit}, make([]string, 0, len(p.ClaimTimeouts))
		for name := range p.ClaimTimeouts {
			args = append(args, name)
			marks = append(marks, "?"+strconv.Itoa(len(args)))
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, tool FROM executions
WHERE state = 'ready' AND next_attempt_at <= ?1 AND tool IN (`+strings.Join(marks, ",")+`)
ORDER BY next_attempt_at LIMIT ?2`, args...)
		if err != nil {
			return wrap("claiming executions", err)
		}
		type due struct {
			id   int64
			tool string
		}
		dues, err := collect(rows, func(row scanner) (due, error) {
			var d due
			return d, row.Scan(&d.id, &d.tool)
		})
		if err != nil {
			return wrap("claiming executions", err)
		}
		for _, d := range dues {
			c := store.Claim{DBNow: now}
			c.Execution, err = scanExecutionWith(tx.QueryRowContext(ctx, `
UPDATE executions SET state = 'claimed', claimed_by = ?, attempts = attempts + 1, claim_expires_at = ?, updated_at = ?
WHERE id = ? AND state = 'ready'
RETURNING `+executionColumns+`, `+decisionRound, p.Worker, micros(now.Add(p.ClaimTimeouts[d.tool])), micros(now), d.id), &c.Round)
			if err != nil {
				return wrap("claiming executions", err)
			}
			tx.executionMoved(c.RequestID, c.State)
			claims = append(claims, c)
		}
		return nil
	})
	return claims, err
}

func (e executor) TransitionExecutionRow(ctx context.Context, p store.TransitionParams, t store.Transition) (a store.Applied, at time.Time, ok bool, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		at = tx.clock(p.Now)
		a.ExecutionID = t.ExecutionID
		err := tx.QueryRowContext(ctx, `
UPDATE executions SET
	state = ?1,
	claimed_by = CASE WHEN ?1 = 'claimed' THEN claimed_by END,
	claim_expires_at = CASE WHEN ?1 = 'claimed' THEN claim_expires_at END,
	next_attempt_at = ?2 + ?3,
	response_status = coalesce(nullif(?4, 0), response_status),
	response_body = coalesce(?5, response_body),
	provider_ref = coalesce(nullif(?6, ''), provider_ref),
	last_code = nullif(?7, ''),
	last_error = nullif(?8, ''),
	updated_at = ?2
WHERE id = ?9 AND state = ?10 AND attempts = ?11 AND (?12 = '' OR claimed_by = ?12)
RETURNING request_id, `+decisionRound,
			string(t.To), micros(at), t.Delay.Microseconds(), t.Status, nullBytes(t.Body), t.ProviderRef,
			t.Code, t.Error, t.ExecutionID, string(p.From), t.Attempt, p.Worker).Scan(&a.RequestID, &a.Round)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return wrap("recording outcome", err)
		}
		ok = true
		tx.executionMoved(a.RequestID, t.To)
		return nil
	})
	return a, at, ok, err
}

func (e executor) SupersedeExecution(ctx context.Context, p store.SupersedeParams) (s store.Superseded, ok bool, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		s.At = tx.clock(p.Now)
		err := tx.QueryRowContext(ctx, `
UPDATE executions SET state = 'superseded', claimed_by = NULL, claim_expires_at = NULL,
	last_code = ?, last_error = ?, updated_at = ?
WHERE id = ? AND state = 'claimed' AND attempts = ? AND claimed_by = ?
RETURNING request_id, `+decisionRound,
			p.Code, p.Message, micros(s.At), p.ExecutionID, p.Attempt, p.Worker).Scan(&s.RequestID, &s.Round)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return wrap("superseding execution", err)
		}
		ok = true
		tx.executionMoved(s.RequestID, store.ExecSuperseded)
		return nil
	})
	return s, ok, err
}

func (e executor) ResolveExecution(ctx context.Context, p store.ResolveParams) (r store.Resolved, ok bool, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		r.At = tx.clock(p.Now)
		id := canonicalID(p.RequestID)
		err := tx.QueryRowContext(ctx, `
UPDATE executions SET state = ?1,
	last_code = coalesce(nullif(?2, ''), last_code),
	max_attempts = CASE WHEN ?1 = 'ready' THEN max(max_attempts, attempts + 1) ELSE max_attempts END,
	next_attempt_at = ?3,
	updated_at = ?3
WHERE id = ?4 AND request_id = ?5 AND state = 'needs_review'
RETURNING attempts, `+decisionRound, string(p.To), p.Code, micros(r.At), p.ExecutionID, id).Scan(&r.Attempts, &r.Round)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return wrap("resolving execution", err)
		}
		ok = true
		tx.executionMoved(id, p.To)
		return nil
	})
	return r, ok, err
}

func (e executor) ExpireClaimRows(ctx context.Context, now *time.Time, limit int) (out []store.ExpiredClaim, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		at := tx.clock(now)
		rows, err := tx.QueryContext(ctx, `SELECT id, request_id, `+decisionRound+`, attempts, claimed_by FROM executions
WHERE state = 'claimed' AND claim_expires_at <= ? ORDER BY claim_expires_at LIMIT ?`, micros(at), limit)
		if err != nil {
			return wrap("expiring claims", err)
		}
		if out, err = collect(rows, func(row scanner) (store.ExpiredClaim, error) {
			c := store.ExpiredClaim{At: at}
			return c, row.Scan(&c.ExecutionID, &c.RequestID, &c.Round, &c.Attempts, &c.HeldBy)
		}); err != nil {
			return wrap("expiring claims", err)
		}
		for _, c := range out {
			if _, err := tx.ExecContext(ctx, `
UPDATE executions SET state = 'unknown', claimed_by = NULL, claim_expires_at = NULL, next_attempt_at = ?1,
	last_code = 'claim_timeout', last_error = 'the claim expired before an outcome was recorded', updated_at = ?1
WHERE id = ?2`, micros(at), c.ExecutionID); err != nil {
				return wrap("expiring claims", err)
			}
			tx.executionMoved(c.RequestID, store.ExecUnknown)
		}
		return nil
	})
	return out, err
}

func (e executor) LeaseUnknowns(ctx context.Context, now *time.Time, lease time.Duration, limit int) (out []store.Unknown, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		at := tx.clock(now)
		rows, err := tx.QueryContext(ctx, `
UPDATE executions SET next_attempt_at = ?1 + ?2
WHERE id IN (SELECT id FROM executions WHERE state = 'unknown' AND next_attempt_at <= ?1 ORDER BY next_attempt_at LIMIT ?3)
RETURNING `+executionColumns, micros(at), lease.Microseconds(), limit)
		if err != nil {
			return wrap("leasing unknown executions", err)
		}
		out, err = collect(rows, func(row scanner) (store.Unknown, error) {
			x, err := scanExecution(row)
			return store.Unknown{Execution: x, DBNow: at}, err
		})
		return wrap("leasing unknown executions", err)
	})
	return out, err
}

func (e executor) CountUnsettled(ctx context.Context) (unknown, needsReview int, err error) {
	err = e.read().QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM executions WHERE state = 'unknown'),
	(SELECT count(*) FROM executions WHERE state = 'needs_review')`).Scan(&unknown, &needsReview)
	return unknown, needsReview, wrap("counting unsettled executions", err)
}

func (e executor) UnresolvedRequestIDs(ctx context.Context, limit int) ([]string, error) {
	rows, err := e.read().QueryContext(ctx, `
SELECT id FROM (
	SELECT * FROM (SELECT request_id AS id, updated_at FROM executions WHERE state = 'unknown' ORDER BY next_attempt_at LIMIT ?1)
	UNION ALL
	SELECT * FROM (SELECT request_id, updated_at FROM executions WHERE state = 'needs_review' ORDER BY updated_at LIMIT ?1)
) ORDER BY updated_at LIMIT ?1`, limit)
	if err != nil {
		return nil, wrap("listing unresolved executions", err)
	}
	ids, err := collect(rows, func(row scanner) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
	return ids, wrap("listing unresolved executions", err)
}
