package approvals

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/wire"
)

// Refusal codes of POST /v1/requests/{ref}/outcome.
const (
	// CodeOutcomeConflict: the request already has another outcome.
	CodeOutcomeConflict = "outcome_conflict"
	// CodeNotAgentExecuted: the request awaits no outcome from its agent
	// (its tool is countersign's to send, or it was not approved).
	CodeNotAgentExecuted = "not_agent_executed"
)

// ErrOutcomeConflict and ErrNotAgentExecuted are ReportOutcome's refusals.
var (
	ErrOutcomeConflict  = errors.New("approvals: the request already has another outcome")
	ErrNotAgentExecuted = errors.New("approvals: the request awaits no outcome from its agent")
)

// OutcomeReport is an agent's report of the write it performed itself.
type OutcomeReport = wire.Outcome

// MaxOutcomeField is the longest provider_ref or detail kept, in bytes.
const MaxOutcomeField = 4096

// ReportOutcome records the outcome agent reports for its approved request
// of an agent-executed tool. The same report twice records one; another
// report after it is ErrOutcomeConflict.
func (s *Service) ReportOutcome(ctx context.Context, agent Agent, ref string, out OutcomeReport) (store.Request, error) {
	var to store.ExecState
	switch out.Status {
	case string(store.ExecSucceeded), string(store.ExecFailed):
		to = store.ExecState(out.Status)
	default:
		return store.Request{}, &InputError{Code: CodeInvalidRequest, Field: "status",
			Message: "status must be succeeded or failed."}
	}
	if len(out.ProviderRef) > MaxOutcomeField || len(out.Detail) > MaxOutcomeField {
		return store.Request{}, &InputError{Code: CodeInvalidRequest, Field: "detail",
			Message: "provider_ref and detail must each be at most 4096 bytes."}
	}
	req, err := s.Get(ctx, agent, ref)
	if err != nil {
		return store.Request{}, err
	}
	if !req.Policy.AgentExecuted() || req.Status != store.RequestApproved {
		return req, ErrNotAgentExecuted
	}
	recorded, err := s.DB.ReportOutcome(ctx, store.OutcomeParams{Request: req, To: to, ProviderRef: out.ProviderRef,
		Detail: out.Detail, Actor: store.AgentActor(agent.Name), Now: s.now()})
	switch {
	case errors.Is(err, store.ErrOutcomeConflict):
		return req, ErrOutcomeConflict
	case errors.Is(err, store.ErrNoExecution):
		return req, ErrNotAgentExecuted
	case err != nil:
		return store.Request{}, err
	}
	if recorded {
		s.Logger.InfoContext(ctx, "outcome reported", slog.String("key", req.Key), slog.String("agent", agent.Name),
			slog.String("status", out.Status))
	}
	return s.DB.RequestByRef(ctx, req.ID)
}

// outcomeSweepLimit is how many overdue writes one sweep moves.
const outcomeSweepLimit = 500

// ExpireOutcomesOnce moves the approved writes of agent-executed tools
// whose agent reported no outcome within the tool's outcome_timeout to
// needs_review, and returns how many moved.
func (s *Service) ExpireOutcomesOnce(ctx context.Context) (int, error) {
	timeouts := map[string]time.Duration{}
	for name, t := range s.CurrentTools() {
		if t.AgentExecuted() {
			timeouts[name] = t.outcomeTimeout()
		}
	}
	if len(timeouts) == 0 {
		return 0, nil
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	n, err := s.DB.ExpireOutcomes(ctx, timeouts, now, outcomeSweepLimit)
	if n > 0 {
		s.Logger.WarnContext(ctx, "agent-executed writes need review: no outcome was reported in time", slog.Int("count", n))
	}
	return n, err
}
