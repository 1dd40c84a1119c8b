package approvals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/countersign/countersign/store"
)

// Decision asks to record a verdict on one round of a request, as the decider
// saw it.
type Decision struct {
	RequestID   string
	Round       int
	PayloadHash string // the hash on the card the decider clicked
	Verdict     store.Verdict
	DecidedBy   string // a Slack user id
	Via         string // "slack", "inbox"
}

// Outcome is the decision that stands for the round. Created is true only for
// the call that recorded it.
type Outcome struct {
	Request  store.Request
	Decision store.Decision
	Created  bool
}

// Err is nil for the call that recorded the decision. For every later call
// it is the *NotPendingError naming the decision that stands, which surfaces
// answer as the already_decided refusal.
func (o Outcome) Err() error {
	if o.Created {
		return nil
	}
	d := o.Decision
	return &NotPendingError{Status: o.Request.Status, Decision: &d}
}

// Decide records the first verdict for a request round. Every later call for
// the same round, whatever its verdict, gets the existing decision back with
// Created false and changes nothing (Outcome.Err says so). It fails with
// ErrNotAllowed or ErrSelfApproval (both audited), ErrStaleCard, a
// *NotPendingError, or ErrNotFound; RefusalFor words each.
func (s *Service) Decide(ctx context.Context, d Decision) (Outcome, error) {
	if d.Verdict != store.VerdictApprove && d.Verdict != store.VerdictReject {
		return Outcome{}, fmt.Errorf("unknown verdict %q", d.Verdict)
	}
	req, err := s.DB.RequestByID(ctx, d.RequestID)
	if err != nil {
		return Outcome{}, err
	}
	tool, known := s.Tools[req.Tool]
	if d.Verdict == store.VerdictApprove && req.RequestedFor != "" && d.DecidedBy == req.RequestedFor {
		s.refuse(ctx, req, d.DecidedBy, "decision_refused", "self_approval", d.attrs())
		return Outcome{}, ErrSelfApproval
	}
	if !known {
		s.refuse(ctx, req, d.DecidedBy, "decision_refused", "tool_not_configured", d.attrs())
		return Outcome{}, ErrNotAllowed
	}
	allowed, err := s.mayDecideRequest(ctx, req, d.DecidedBy)
	if err != nil {
		return Outcome{}, err
	}
	if !allowed {
		s.refuse(ctx, req, d.DecidedBy, "decision_refused", "not_an_approver", d.attrs())
		return Outcome{}, ErrNotAllowed
	}

	decidedReq, decision, decided, err := s.DB.Decide(ctx, store.DecideParams{
		RequestID:   d.RequestID,
		Round:       d.Round,
		PayloadHash: d.PayloadHash,
		Verdict:     d.Verdict,
		DecidedBy:   d.DecidedBy,
		Via:         d.Via,
		MaxAttempts: maxAttempts(tool),
		Now:         s.now(),
	})
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{Request: decidedReq, Decision: decision, Created: decided}
	if out.Created {
		s.Logger.Info("request decided", slog.String("key", out.Request.Key),
			slog.String("verdict", string(d.Verdict)), slog.String("by", d.DecidedBy), slog.Int("round", d.Round))
		return out, nil
	}
	return s.explainUndecided(ctx, d)
}

// explainUndecided says why the conditional write did not happen: the round
// was decided already, the card is stale, or the request left pending.
func (s *Service) explainUndecided(ctx context.Context, d Decision) (Outcome, error) {
	req, err := s.DB.RequestByID(ctx, d.RequestID)
	if err != nil {
		return Outcome{}, err
	}
	if d.Round != req.Round || d.PayloadHash != req.PayloadHash {
		return Outcome{}, ErrStaleCard
	}
	existing, err := s.DB.DecisionFor(ctx, req.ID, req.Round)
	switch {
	case err == nil:
		return Outcome{Request: req, Decision: existing}, nil
	case !errors.Is(err, store.ErrNotFound):
		return Outcome{}, err
	}
	status := req.Status
	if status == store.RequestPending {
		// Past its expiry but not yet swept.
		status = store.RequestExpired
	}
	return Outcome{}, &NotPendingError{Status: status}
}

// MayDecide reports whether user is one of the tool's approvers, directly or
// through a user group. The Slack surface uses it for every human action on a
// request, not only verdicts.
func (s *Service) MayDecide(ctx context.Context, toolName, user string) (bool, error) {
	tool, known := s.Tools[toolName]
	if !known || user == "" {
		return false, nil
	}
	if slices.Contains(tool.approverUsers(), user) {
		return true, nil
	}
	if s.Groups == nil {
		return false, nil
	}
	for _, group := range tool.approverGroups() {
		members, err := s.Groups.GroupMembers(ctx, group)
		if err != nil {
			return false, fmt.Errorf("resolving user group %s: %w", group, err)
		}
		if slices.Contains(members, user) {
			return true, nil
		}
	}
	return false, nil
}

// Resolution asks to settle an execution that needs a human (docs/STATES.md).
type Resolution struct {
	RequestID   string
	ExecutionID int64
	Action      string // what the executor is asked to do
	By          string // a Slack user id
	Via         string // "slack"
}

// AuthorizeResolution returns the request when by may resolve its execution:
// the tool's approvers may. Anyone else gets ErrNotAllowed, audited as
// resolution_refused; a missing request is ErrNotFound.
func (s *Service) AuthorizeResolution(ctx context.Context, r Resolution) (store.Request, error) {
	req, err := s.DB.RequestByID(ctx, r.RequestID)
	if err != nil {
		return store.Request{}, err
	}
	allowed, err := s.MayDecide(ctx, req.Tool, r.By)
	if err != nil {
		return store.Request{}, err
	}
	if !allowed {
		s.refuse(ctx, req, r.By, "resolution_refused", "not_an_approver",
			map[string]any{"action": r.Action, "execution_id": r.ExecutionID, "via": r.Via})
		return store.Request{}, ErrNotAllowed
	}
	return req, nil
}

func (d Decision) attrs() map[string]any {
	return map[string]any{"verdict": d.Verdict, "round": d.Round, "via": d.Via}
}

// refuse audits an attempt that was not allowed: kind is decision_refused or
// resolution_refused, reason why. Every refusal of a person's attempt is
// audited here, whatever surface it came from. The refusal changes no state,
// so a failure to audit it is logged rather than returned.
func (s *Service) refuse(ctx context.Context, req store.Request, actor, kind, reason string, data map[string]any) {
	data["reason"] = reason
	err := s.DB.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: actor, Kind: kind, Data: data})
	s.Logger.Warn(strings.ReplaceAll(kind, "_", " "), slog.String("key", req.Key), slog.String("by", actor), slog.String("reason", reason))
	if err != nil {
		s.Logger.Error("auditing a refused attempt", slog.String("key", req.Key), slog.String("kind", kind), slog.String("error", err.Error()))
	}
}

func maxAttempts(t Tool) int {
	if t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	return DefaultMaxAttempts
}
