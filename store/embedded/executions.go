package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertExecution(ctx context.Context, x store.NewExecution) error {
	return e.write(ctx, func(tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, q.Get("insert_execution"),
			canonicalID(x.RequestID), x.DecisionID, x.MaxAttempts, micros(x.At)); err != nil {
			return wrap("creating execution", err)
		}
		return nil
	})
}

func (e executor) LatestExecution(ctx context.Context, requestID string) (store.Execution, error) {
	return scanExecution(e.read().QueryRowContext(ctx,
		q.Get("latest_execution"), canonicalID(requestID)))
}

func (e executor) ExecutionsFor(ctx context.Context, requestID string) ([]store.Execution, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("executions_for"), canonicalID(requestID))
	return collect("reading executions", scanExecution, rows, err)
}

func (e executor) ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error) {
	return scanExecution(e.read().QueryRowContext(ctx,
		q.Get("execution_for_decision"), decisionID))
}

func (e executor) ExecutionExists(ctx context.Context, id int64, requestID string) (bool, error) {
	return e.exists(ctx, "reading execution", q.Get("execution_exists"), id, canonicalID(requestID))
}

// ClaimExecutionRows selects and updates in one IMMEDIATE transaction, so
// no other claimer (in this process or another) commits in between: a row
// is handed to one caller only.
func (e executor) ClaimExecutionRows(ctx context.Context, p store.ClaimParams) (claims []store.Claim, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		claims = nil
		now := tx.clock(p.Now)
		tools := make([]string, 0, len(p.ClaimTimeouts))
		for name := range p.ClaimTimeouts {
			tools = append(tools, name)
		}
		toolList, err := json.Marshal(tools)
		if err != nil {
			return err
		}
		type due struct {
			id   int64
			tool string
		}
		rows, err := tx.QueryContext(ctx, q.Get("due_executions"), micros(now), p.Limit, string(toolList))
		dues, err := collect("claiming executions", func(row scanner) (due, error) {
			var d due
			return d, row.Scan(&d.id, &d.tool)
		}, rows, err)
		if err != nil {
			return err
		}
		for _, d := range dues {
			c := store.Claim{DBNow: now}
			c.Execution, err = scanExecutionWith(tx.QueryRowContext(ctx, q.Get("claim_execution"), p.Worker, micros(now.Add(p.ClaimTimeouts[d.tool])), micros(now), d.id), &c.Round)
			if err != nil {
				return wrap("claiming executions", err)
			}
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
		ok, err = moved(ctx, tx, "recording outcome", q.Get("transition_execution_row"),
			[]any{string(t.To), micros(at), t.Delay.Microseconds(), t.Status, nullBytes(t.Body), t.ProviderRef,
				t.Code, t.Error, t.ExecutionID, string(p.From), t.Attempt, p.Worker}, &a.RequestID, &a.Round)
		return err
	})
	return a, at, ok, err
}

func (e executor) SupersedeExecution(ctx context.Context, p store.SupersedeParams) (s store.Superseded, ok bool, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		s.At = tx.clock(p.Now)
		ok, err = moved(ctx, tx, "superseding execution", q.Get("supersede_execution"),
			[]any{p.Code, p.Message, micros(s.At), p.ExecutionID, p.Attempt, p.Worker}, &s.RequestID, &s.Round)
		return err
	})
	return s, ok, err
}

func (e executor) ResolveExecution(ctx context.Context, p store.ResolveParams) (r store.Resolved, ok bool, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		r.At = tx.clock(p.Now)
		var id string
		ok, err = moved(ctx, tx, "resolving execution", q.Get("resolve_execution"),
			[]any{string(p.To), p.Code, micros(r.At), p.ExecutionID, canonicalID(p.RequestID)}, &id, &r.Attempts, &r.Round)
		return err
	})
	return r, ok, err
}

func (e executor) ExpireClaimRows(ctx context.Context, now *time.Time, limit int) (out []store.ExpiredClaim, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		at := tx.clock(now)
		rows, err := tx.QueryContext(ctx, q.Get("expired_claims"), micros(at), limit)
		if out, err = collect("expiring claims", func(row scanner) (store.ExpiredClaim, error) {
			c := store.ExpiredClaim{At: at}
			return c, row.Scan(&c.ExecutionID, &c.RequestID, &c.Round, &c.Attempts, &c.HeldBy)
		}, rows, err); err != nil {
			return err
		}
		for _, c := range out {
			if _, err := tx.ExecContext(ctx, q.Get("expire_claim"), micros(at), c.ExecutionID); err != nil {
				return wrap("expiring claims", err)
			}
		}
		return nil
	})
	return out, err
}

func (e executor) LeaseUnknowns(ctx context.Context, p store.LeaseUnknownsParams) (out []store.Unknown, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		at := tx.clock(p.Now)
		rows, err := tx.QueryContext(ctx, q.Get("lease_unknowns"), micros(at), p.Lease.Microseconds(), p.Limit)
		out, err = collect("leasing unknown executions", func(row scanner) (store.Unknown, error) {
			x, err := scanExecution(row)
			return store.Unknown{Execution: x, DBNow: at}, err
		}, rows, err)
		return err
	})
	return out, err
}

func (e executor) CountUnsettled(ctx context.Context) (unknown, needsReview int, err error) {
	err = e.read().QueryRowContext(ctx, q.Get("count_unsettled")).Scan(&unknown, &needsReview)
	return unknown, needsReview, wrap("counting unsettled executions", err)
}

func (e executor) UnresolvedRequestIDs(ctx context.Context, limit int) ([]string, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("unresolved_request_ids"), limit)
	return collect("listing unresolved executions", func(row scanner) (string, error) {
		var id string
		return id, row.Scan(&id)
	}, rows, err)
}

// moved runs an UPDATE of one execution RETURNING its request id and then
// dest; false when no row matched.
func moved(ctx context.Context, tx *writeTx, what string, query string, args []any, requestID *string, dest ...any) (bool, error) {
	err := tx.QueryRowContext(ctx, query, args...).Scan(append([]any{requestID}, dest...)...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, wrap(what, err)
	}
	return true, nil
}
