package executor

import (
	"context"
	"log/slog"

	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/store"
)

// provenNotDone reports whether an execution's last recorded code proves the
// provider does not have the write: a retryable answer, a claim released
// unsent, or a verify URL that answered 404. Revalidation runs before the
// first send and after such codes only; after an ambiguous outcome (a
// same-key resend, a human's resend) the write may exist, and a new round
// for it would be worse than the approval's age.
func provenNotDone(tool Tool, lastCode *string) bool {
	if lastCode == nil {
		return false
	}
	switch code := *lastCode; code {
	case CodeNotDone, CodeClaimTooShort, CodePolicyUnchecked:
		return true
	default:
		o, known := tool.Sender.Outcome(code)
		return known && o == sender.OutcomeRetry
	}
}

// staleness is why an approval no longer stands, and, when a stricter
// policy retired it, what its new round is frozen under. escalate sends
// the execution to needs_review instead of a new round.
type staleness struct {
	code, msg string
	escalate  bool
	policy    *store.Policy
	denial    *store.AutoDecision
	data      map[string]any
}

// revalidate decides, before a send that nothing has preceded at the
// provider, whether the approval still stands: a decision older than the
// tool's approval_ttl, a precondition the tool's checker refuses, or a
// policy in force stricter than the one it was approved under makes it
// stale. An unreachable precondition counts as failed: nothing is written
// without a positive check, and a new decision is cheaper than a wrong
// write. A policy that could not be re-checked is an error: the claim is
// released unsent and tried again. The policy comes last, closest to the
// send, so a reload during the precondition's call is seen.
func (e *Executor) revalidate(ctx context.Context, tool Tool, c store.Claim) (*staleness, error) {
	if tool.ApprovalTTL > 0 {
		if age := c.DBNow.Sub(c.ApprovedAt); age > tool.ApprovalTTL {
			return &staleness{code: CodeApprovalExpired,
				msg: "approved " + age.Round(1e9).String() + " ago, longer than the tool's approval_ttl of " + tool.ApprovalTTL.String()}, nil
		}
	}
	if tool.Checker != nil {
		ctx, cancel := context.WithTimeout(ctx, tool.Timeout)
		defer cancel()
		if err := tool.Checker.Check(ctx, writeOf(c.Execution)); err != nil {
			return &staleness{code: CodePrecondition, msg: err.Error()}, nil
		}
	}
	return e.recheckPolicy(ctx, c)
}

// supersede retires the claimed execution and sends the request back for a
// new decision, or to its denial. It reports whether it did.
func (e *Executor) supersede(ctx context.Context, tool Tool, c store.Claim, s staleness, log *slog.Logger) bool {
	round, done, err := e.db.Supersede(ctx, store.SupersedeParams{
		ExecutionID: c.ID, Attempt: c.Attempts, Worker: e.worker, Code: s.code, Message: s.msg,
		RequestTTL: tool.RequestTTL, Now: e.now(), Policy: s.policy, Denial: s.denial, Data: s.data,
	})
	switch {
	case err != nil:
		log.Error("superseding failed; the claim will expire and be reconciled", slog.String("error", err.Error()))
		return false
	case !done:
		e.metrics.StaleOutcomes.Inc()
		return false
	}
	e.metrics.Executions.WithLabelValues(string(store.ExecSuperseded), e.codeLabel(s.code)).Inc()
	if s.denial != nil {
		log.Info("execution superseded; the policy in force denies it", slog.String("code", s.code), slog.String("reason", s.msg), slog.Int("new_round", round))
		return true
	}
	log.Info("execution superseded; asking for a new decision", slog.String("code", s.code), slog.String("reason", s.msg), slog.Int("new_round", round))
	return true
}
