package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertExecution(ctx context.Context, x store.NewExecution) error {
	err := e.later(ctx, q.Get("insert_execution"),
		x.RequestID, x.DecisionID, x.MaxAttempts, x.At)
	return wrap("creating execution", err)
}

func (e executor) LatestExecution(ctx context.Context, requestID string) (store.Execution, error) {
	rows, err := e.db.Query(ctx, q.Get("latest_execution"), requestID)
	return one[store.Execution]("reading execution", rows, err)
}

func (e executor) ExecutionsFor(ctx context.Context, requestID string) ([]store.Execution, error) {
	rows, err := e.db.Query(ctx, q.Get("executions_for"), requestID)
	return collect[store.Execution]("reading executions", rows, err)
}

func (e executor) ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error) {
	rows, err := e.db.Query(ctx, q.Get("execution_for_decision"), decisionID)
	return one[store.Execution]("reading execution", rows, err)
}

func (e executor) ExecutionExists(ctx context.Context, id int64, requestID string) (bool, error) {
	return e.exists(ctx, "reading execution", q.Get("execution_exists"), id, requestID)
}

// claimTimeouts splits the worker's tools and their claim timeouts into
// parallel arrays.
func claimTimeouts(p store.ClaimParams) (tools []string, micros []int64) {
	for name, d := range p.ClaimTimeouts {
		tools = append(tools, name)
		micros = append(micros, d.Microseconds())
	}
	return tools, micros
}

func (e executor) ClaimExecutionRows(ctx context.Context, p store.ClaimParams) ([]store.Claim, error) {
	tools, micros := claimTimeouts(p)
	rows, err := e.db.Query(ctx, q.Get("claim_execution_rows"), p.Now, p.Limit, tools, p.Worker, micros)
	return collect[store.Claim]("claiming executions", rows, err)
}

// ClaimExecutionsBatch is ClaimExecutions in one statement, with what each
// claim owes.
func (e executor) ClaimExecutionsBatch(ctx context.Context, p store.ClaimParams, owed store.Owed) ([]store.Claim, error) {
	tools, micros := claimTimeouts(p)
	o, err := flatten([]store.Owed{owed})
	if err != nil {
		return nil, wrap("claiming executions", err)
	}
	rows, err := e.db.Query(ctx, q.Get("claim_executions_batch"), p.Now, p.Limit, tools, p.Worker, micros,
		o.evActor, o.evKind, o.evData, o.obKind, o.obData, owed.WakeChange, channelChange, o.obCoalesce)
	return collect[store.Claim]("claiming executions", rows, err)
}

func (e executor) TransitionExecutionRow(ctx context.Context, p store.TransitionParams, t store.Transition) (store.Applied, time.Time, bool, error) {
	var (
		a  store.Applied
		at time.Time
	)
	err := e.db.QueryRow(ctx, q.Get("transition_execution_row"),
		t.ExecutionID, t.Attempt, string(t.To), t.Status, t.Body, t.ProviderRef, t.Code, t.Error,
		t.Delay.Microseconds(), p.Now, string(p.From), p.Worker).Scan(&a.ExecutionID, &a.RequestID, &a.Round, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Applied{}, time.Time{}, false, nil
	}
	return a, at, err == nil, wrap("recording outcome", err)
}

// TransitionExecutionsBatch is TransitionExecutions in one statement, with
// what each move owes.
func (e executor) TransitionExecutionsBatch(ctx context.Context, p store.TransitionParams, ts []store.Transition, owed []store.Owed) ([]store.Applied, error) {
	n := len(ts)
	var (
		ids      = make([]int64, n)
		attempts = make([]int32, n)
		states   = make([]string, n)
		statuses = make([]int32, n)
		bodies   = make([][]byte, n)
		refs     = make([]string, n)
		codes    = make([]string, n)
		errs     = make([]string, n)
		delays   = make([]int64, n)
	)
	for i, t := range ts {
		ids[i], attempts[i], states[i] = t.ExecutionID, int32(t.Attempt), string(t.To)
		statuses[i], bodies[i], refs[i] = int32(t.Status), t.Body, t.ProviderRef
		codes[i], errs[i], delays[i] = t.Code, t.Error, t.Delay.Microseconds()
	}
	o, err := flatten(owed)
	if err != nil {
		return nil, wrap("recording outcomes", err)
	}
	rows, err := e.db.Query(ctx, q.Get("transition_executions_batch"),
		ids, attempts, states, statuses, bodies, refs, codes, errs, delays, o.wakeChange, o.wakeReady,
		p.Now, string(p.From), p.Worker,
		o.evOrd, o.evActor, o.evKind, o.evData, o.obOrd, o.obKind, o.obData, o.cbOrd, o.cbEvent,
		callbackAgents(p), store.CallbackRetryWindow.Microseconds(), channelChange, channelReady, o.obCoalesce)
	return collect[store.Applied]("recording outcomes", rows, err)
}

func (e executor) SupersedeExecution(ctx context.Context, p store.SupersedeParams) (store.Superseded, bool, error) {
	var s store.Superseded
	err := e.db.QueryRow(ctx, q.Get("supersede_execution"),
		p.ExecutionID, p.Attempt, p.Worker, p.Code, p.Message, p.Now).Scan(&s.RequestID, &s.Round, &s.PayloadHash, &s.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Superseded{}, false, nil
	}
	return s, err == nil, wrap("superseding execution", err)
}

func (e executor) ResolveExecution(ctx context.Context, p store.ResolveParams) (store.Resolved, bool, error) {
	var r store.Resolved
	err := e.db.QueryRow(ctx, q.Get("resolve_execution"),
		p.ExecutionID, p.RequestID, string(p.To), p.Code, p.Now, p.Grant, p.ClearVerifyFirst).Scan(&r.Attempts, &r.Round, &r.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Resolved{}, false, nil
	}
	return r, err == nil, wrap("resolving execution", err)
}

func (e executor) ExpireClaimRows(ctx context.Context, now *time.Time, limit int, code, message string) ([]store.ExpiredClaim, error) {
	rows, err := e.db.Query(ctx, q.Get("expire_claim_rows"), now, limit, code, message)
	return collect[store.ExpiredClaim]("expiring claims", rows, err)
}

func (e executor) LeaseUnknowns(ctx context.Context, p store.LeaseUnknownsParams) ([]store.Unknown, error) {
	rows, err := e.db.Query(ctx, q.Get("lease_unknowns"), p.Now, p.Lease.Microseconds(), p.Limit)
	return collect[store.Unknown]("leasing unknown executions", rows, err)
}

func (e executor) CountUnsettled(ctx context.Context) (unknown, needsReview int, err error) {
	err = e.db.QueryRow(ctx, q.Get("count_unsettled")).Scan(&unknown, &needsReview)
	return unknown, needsReview, wrap("counting unsettled executions", err)
}

func (e executor) UnresolvedRequestIDs(ctx context.Context, limit int) ([]string, error) {
	rows, err := e.db.Query(ctx, q.Get("unresolved_request_ids"), limit)
	if err != nil {
		return nil, wrap("listing unresolved executions", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, wrap("listing unresolved executions", err)
}

// callbackAgents is p.CallbackAgents, never nil (a nil slice is SQL NULL).
func callbackAgents(p store.TransitionParams) []string {
	if p.CallbackAgents == nil {
		return []string{}
	}
	return p.CallbackAgents
}
