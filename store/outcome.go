package store

import (
	"context"
	"errors"
	"time"
)

// Codes an agent-executed write's execution records.
const (
	// CodeAgentFailed is the last_code of a write its agent reported failed.
	CodeAgentFailed = "agent_failed"
	// CodeOutcomeTimeout is the last_code of one whose agent reported no
	// outcome in time.
	CodeOutcomeTimeout = "outcome_timeout"
)

// ErrOutcomeConflict is a report of an outcome other than the one already
// recorded for the execution.
var ErrOutcomeConflict = errors.New("store: the execution already has another outcome")

// ErrNoExecution is a report for a request that has no execution to record
// it on: it was not approved.
var ErrNoExecution = errors.New("store: the request has no approved execution")

// OutcomeParams is an agent's report of how the write it performed itself
// went.
type OutcomeParams struct {
	Request     Request
	To          ExecState // succeeded or failed
	ProviderRef string
	Detail      string
	Actor       string
	Now         *time.Time
}

// ReportOutcome records the outcome of an agent-executed write on the
// request's execution, from ready (or from needs_review, when its outcome
// timeout passed first), with the audit event, card update and callback of
// any settled execution (TransitionExecutions). recorded is false for a
// report that repeats the recorded one (same status and provider
// reference); another is ErrOutcomeConflict.
func (l *Ledger) ReportOutcome(ctx context.Context, p OutcomeParams) (recorded bool, err error) {
	// The row can move between the read and the move (the outcome sweep
	// takes it for a moment): read again, a few times.
	for range 5 {
		parts, err := l.PartsOf(ctx, []Request{p.Request})
		if err != nil {
			return false, err
		}
		e := parts[0].Execution
		if e == nil {
			return false, ErrNoExecution
		}
		switch e.State {
		case ExecSucceeded, ExecFailed:
			if e.State == p.To && deref(e.ProviderRef) == p.ProviderRef {
				return false, nil
			}
			return false, ErrOutcomeConflict
		case ExecReady, ExecNeedsReview:
			t := Transition{ExecutionID: e.ID, Attempt: e.Attempts, To: p.To, ProviderRef: p.ProviderRef,
				EventData: map[string]any{"execution_id": e.ID, "reported": true, "provider_ref": p.ProviderRef, "detail": p.Detail}}
			if p.To == ExecFailed {
				t.Code, t.Error = CodeAgentFailed, p.Detail
			}
			applied, err := l.TransitionExecutions(ctx, TransitionParams{From: e.State, Actor: p.Actor, Now: p.Now}, []Transition{t})
			if err != nil {
				return false, err
			}
			if len(applied) == 1 {
				return true, nil
			}
		case ExecClaimed:
		default:
			return false, ErrOutcomeConflict
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false, ErrOutcomeConflict
}

// OutcomeSweeper is the actor of the moves of overdue agent-executed
// writes to needs_review.
const OutcomeSweeper = "outcome-sweep"

// ExpireOutcomes moves up to limit approved writes of agent-executed tools
// (timeouts: each tool's outcome timeout) that waited longer than it for
// their outcome to needs_review, with its audit event, card update and
// needs-review callback, and returns how many moved. It is built from the
// executor's own moves: such a row is claimed as of the timeout ago (so
// only rows approved before it are due) and at once moved on.
func (l *Ledger) ExpireOutcomes(ctx context.Context, timeouts map[string]time.Duration, now time.Time, limit int) (int, error) {
	moved := 0
	for tool, timeout := range timeouts {
		asOf := now.Add(-timeout)
		claims, err := l.ClaimExecutions(ctx, ClaimParams{Worker: OutcomeSweeper, Limit: limit - moved,
			ClaimTimeouts: map[string]time.Duration{tool: timeout + time.Minute}, Now: &asOf})
		if err != nil {
			return moved, err
		}
		ts := make([]Transition, len(claims))
		for i, c := range claims {
			ts[i] = Transition{ExecutionID: c.ID, Attempt: c.Attempts, To: ExecNeedsReview, Code: CodeOutcomeTimeout,
				Error:     "no outcome was reported within the tool's outcome_timeout",
				EventData: map[string]any{"execution_id": c.ID, "code": CodeOutcomeTimeout, "outcome_timeout": timeout.String()}}
		}
		applied, err := l.TransitionExecutions(ctx, TransitionParams{From: ExecClaimed, Worker: OutcomeSweeper, Actor: OutcomeSweeper, Now: &now}, ts)
		if err != nil {
			return moved, err
		}
		moved += len(applied)
		if moved >= limit {
			break
		}
	}
	return moved, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
