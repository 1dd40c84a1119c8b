package embedded

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertExecution(ctx context.Context, x store.NewExecution) error {
	return e.tx.exec(ctx, "creating execution", q.Get("insert_execution"),
		canonicalID(x.RequestID), x.DecisionID, x.MaxAttempts, micros(x.At))
}

func (e executor) LatestExecution(ctx context.Context, requestID string) (store.Execution, error) {
	return scanExecution(e.read().QueryRowContext(ctx, q.Get("latest_execution"), canonicalID(requestID)))
}

func (e executor) ExecutionsFor(ctx context.Context, requestID string) ([]store.Execution, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("executions_for"), canonicalID(requestID))
	return collect("reading executions", scanExecution, rows, err)
}

func (e executor) ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error) {
	return scanExecution(e.read().QueryRowContext(ctx, q.Get("execution_for_decision"), decisionID))
}

func (e executor) ExecutionExists(ctx context.Context, id int64, requestID string) (bool, error) {
	return e.exists(ctx, "reading execution", q.Get("execution_exists"), id, canonicalID(requestID))
}

// ClaimExecutionRows is one UPDATE in an IMMEDIATE transaction, so no
// other claimer (in this process or another) commits between its select and
// its update: a row is handed to one caller only.
func (e executor) ClaimExecutionRows(ctx context.Context, p store.ClaimParams) ([]store.Claim, error) {
	now := e.tx.clock(p.Now)
	timeouts := make(map[string]int64, len(p.ClaimTimeouts))
	for tool, d := range p.ClaimTimeouts {
		timeouts[tool] = d.Microseconds()
	}
	raw, err := json.Marshal(timeouts)
	if err != nil {
		return nil, err
	}
	rows, err := e.tx.QueryContext(ctx, q.Get("claim_executions"), p.Worker, micros(now), string(raw), p.Limit)
	return collect("claiming executions", func(row scanner) (c store.Claim, err error) {
		c.DBNow = now
		c.Execution, err = scanExecutionWith(row, &c.Round, &c.PolicyVersion)
		return c, err
	}, rows, err)
}

func (e executor) TransitionExecutionRow(ctx context.Context, p store.TransitionParams, t store.Transition) (a store.Applied, at time.Time, ok bool, err error) {
	at, a.ExecutionID = e.tx.clock(p.Now), t.ExecutionID
	ok, err = found("recording outcome", e.tx.QueryRowContext(ctx, q.Get("transition_execution_row"), string(t.To), micros(at),
		t.Delay.Microseconds(), t.Status, nullBytes(t.Body), t.ProviderRef, t.Code, t.Error, t.ExecutionID, string(p.From),
		t.Attempt, p.Worker).Scan(&a.RequestID, &a.Round))
	return a, at, ok, err
}

func (e executor) SupersedeExecution(ctx context.Context, p store.SupersedeParams) (s store.Superseded, ok bool, err error) {
	s.At = e.tx.clock(p.Now)
	ok, err = found("superseding execution", e.tx.QueryRowContext(ctx, q.Get("supersede_execution"), p.Code, p.Message,
		micros(s.At), p.ExecutionID, p.Attempt, p.Worker).Scan(&s.RequestID, &s.Round, &s.PayloadHash))
	return s, ok, err
}

func (e executor) ResolveExecution(ctx context.Context, p store.ResolveParams) (r store.Resolved, ok bool, err error) {
	r.At = e.tx.clock(p.Now)
	var id string
	ok, err = found("resolving execution", e.tx.QueryRowContext(ctx, q.Get("resolve_execution"), string(p.To), p.Code,
		micros(r.At), p.ExecutionID, canonicalID(p.RequestID), p.Grant, p.ClearVerifyFirst).Scan(&id, &r.Attempts, &r.Round))
	return r, ok, err
}

func (e executor) ExpireClaimRows(ctx context.Context, now *time.Time, limit int, code, message string) ([]store.ExpiredClaim, error) {
	at := e.tx.clock(now)
	rows, err := e.tx.QueryContext(ctx, q.Get("expired_claims"), micros(at), limit)
	out, err := collect("expiring claims", func(row scanner) (store.ExpiredClaim, error) {
		c := store.ExpiredClaim{At: at}
		return c, row.Scan(&c.ExecutionID, &c.RequestID, &c.Round, &c.Attempts, &c.HeldBy)
	}, rows, err)
	for i := 0; i < len(out) && err == nil; i++ {
		err = e.tx.exec(ctx, "expiring claims", q.Get("expire_claim"), micros(at), out[i].ExecutionID, code, message)
	}
	return out, err
}

func (e executor) LeaseUnknowns(ctx context.Context, p store.LeaseUnknownsParams) ([]store.Unknown, error) {
	at := e.tx.clock(p.Now)
	rows, err := e.tx.QueryContext(ctx, q.Get("lease_unknowns"), micros(at), p.Lease.Microseconds(), p.Limit)
	return collect("leasing unknown executions", func(row scanner) (store.Unknown, error) {
		x, err := scanExecution(row)
		return store.Unknown{Execution: x, DBNow: at}, err
	}, rows, err)
}

func (e executor) CountUnsettled(ctx context.Context) (unknown, needsReview int, err error) {
	err = e.read().QueryRowContext(ctx, q.Get("count_unsettled")).Scan(&unknown, &needsReview)
	return unknown, needsReview, wrap("counting unsettled executions", err)
}

func (e executor) UnresolvedRequestIDs(ctx context.Context, limit int) ([]string, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("unresolved_request_ids"), limit)
	return collect("listing unresolved executions", func(row scanner) (id string, err error) {
		return id, row.Scan(&id)
	}, rows, err)
}
