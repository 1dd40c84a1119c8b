package approvals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

// Decision asks to record a verdict on one round of a request, as the decider
// saw it: one reviewer's vote, which decides the round when it is a reject or
// the approval that meets the request's policy.
type Decision struct {
	RequestID   string
	Round       int
	PayloadHash string // the hash on the card the decider clicked
	Verdict     store.Verdict
	DecidedBy   string // the decider, as printed (identity.ID.String)
	Via         string // the surface it came through (bot.Via, inbox.Via)
	Reason      string // why, in the reviewer's words; see Tool.RejectReason
	// Grant, on an approval, also allows similar writes for that long (a
	// standing grant, see GrantRule) once this vote decides the round.
	Grant time.Duration
}

// maxReasonBytes bounds a reviewer's reason.
const maxReasonBytes = 2000

// Outcome is what a vote did and where the round stands. Created is true
// only for the call that recorded the round's decision; Counted for a vote
// that was recorded without deciding; Repeat for a reviewer who had voted in
// the round already (nothing changed).
type Outcome struct {
	Request  store.Request
	Decision store.Decision
	Created  bool
	Counted  bool
	Repeat   bool
	// Vote is the reviewer's vote in the round (cast now or before), and
	// Votes all of the round's, oldest first; empty once the round was
	// decided before this call.
	Vote  store.Vote
	Votes []store.Vote
	// Grant is the standing grant this vote created (Decision.Grant).
	Grant *Grant
}

// Err is nil for a call that recorded a vote or found the reviewer's own
// vote in a round still open. For a call on a round decided before it, it is
// the *NotPendingError naming the decision that stands, which surfaces
// answer as the already_decided refusal.
func (o Outcome) Err() error {
	if o.Created || o.Counted || o.Repeat {
		return nil
	}
	d := o.Decision
	return &NotPendingError{Status: o.Request.Status, Decision: &d}
}

// Progress words where the round stands for the reviewer who just voted:
// "1 of 2 approvals: waiting for one more approver".
func (o Outcome) Progress() string {
	return Progress(o.Request.Policy, o.Votes)
}

// Decide casts d's vote. A reject by an eligible reviewer decides the round,
// as does the approval that brings the round's distinct approvers to the
// request's policy; the decision is written once, whatever the concurrency.
// A reviewer's second vote in a round changes nothing (Outcome.Repeat). A
// vote on a round decided before gets the decision back with Outcome.Err
// saying so. It fails with ErrNotAllowed or ErrSelfApproval (both audited),
// ErrStaleCard, a *NotPendingError, an *InputError for a reason that breaks
// the tool's rule or a grant it cannot make (field "grant": see
// grantAsked), or ErrNotFound; RefusalFor words each. An approval with
// d.Grant that decides the round also creates the standing grant
// (Outcome.Grant), in the same transaction.
func (s *Service) Decide(ctx context.Context, d Decision) (Outcome, error) {
	if d.Verdict != store.VerdictApprove && d.Verdict != store.VerdictReject {
		return Outcome{}, fmt.Errorf("unknown verdict %q", d.Verdict)
	}
	req, err := s.DB.RequestByID(ctx, d.RequestID)
	if err != nil {
		return Outcome{}, err
	}
	tool, err := s.eligible(ctx, req, d.DecidedBy, d.Verdict)
	if err != nil {
		if reason, refused := refusedBecause(err); refused {
			s.refuse(ctx, req, d.DecidedBy, store.EventDecisionRefused, reason, d.attrs())
		}
		return Outcome{}, err
	}
	d.Reason = strings.TrimSpace(d.Reason)
	switch {
	case d.Verdict != store.VerdictReject || !tool.RejectReason.AsksReason():
		d.Reason = "" // only a reject asks why
	case tool.RejectReason == ReasonRequired && d.Reason == "":
		return Outcome{}, invalid("reason", "a reject of a %s request needs a reason", req.Tool)
	case len(d.Reason) > maxReasonBytes || strings.ContainsRune(d.Reason, 0):
		return Outcome{}, invalid("reason", "the reason must be at most %d bytes of text", maxReasonBytes)
	}

	var grant *store.NewGrant
	if d.Grant != 0 {
		if grant, err = grantAsked(tool, req, d); err != nil {
			return Outcome{}, err
		}
	}

	res, err := s.DB.Vote(ctx, store.VoteParams{
		RequestID:   d.RequestID,
		Round:       d.Round,
		PayloadHash: d.PayloadHash,
		Verdict:     d.Verdict,
		DecidedBy:   d.DecidedBy,
		Via:         d.Via,
		MaxAttempts: maxAttempts(tool),
		Reason:      d.Reason,
		Now:         s.now(),
		Grant:       grant,
	})
	if err != nil {
		return Outcome{}, err
	}
	if !res.Open {
		return s.explainUndecided(ctx, d)
	}
	out := Outcome{Request: res.Request, Decision: res.Decision, Created: res.Decided,
		Counted: res.Cast && !res.Decided, Repeat: !res.Cast, Vote: res.Vote, Votes: res.Votes, Grant: res.Grant}
	s.Metrics.vote(d.Verdict, out)
	s.countReview(ctx, d, out)
	if g := out.Grant; g != nil {
		s.Logger.Info("grant created", slog.String("key", out.Request.Key), slog.String("grant", g.ID),
			slog.String("grantor", g.Grantor), slog.String("tool", g.Tool), slog.String("agent", g.Agent),
			slog.Time("expires_at", g.ExpiresAt))
	}
	switch {
	case out.Created:
		s.Logger.Info("request decided", slog.String("key", out.Request.Key),
			slog.String("verdict", string(d.Verdict)), slog.String("by", d.DecidedBy), slog.Int("round", d.Round),
			slog.Int("approvals", store.Approvals(out.Votes)))
	case out.Counted:
		s.Logger.Info("vote recorded", slog.String("key", out.Request.Key),
			slog.String("verdict", string(d.Verdict)), slog.String("by", d.DecidedBy), slog.Int("round", d.Round),
			slog.Int("approvals", store.Approvals(out.Votes)), slog.Int("needed", out.Request.Policy.Needed()))
	}
	return out, nil
}

// explainUndecided says why the vote found no open round: the round was
// decided already, the card is stale, or the request left pending.
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

// Approvers returns who may vote on req: the approvers frozen on it at
// intake, or, for a request stored before policies, its tool's.
func (s *Service) Approvers(req store.Request) []string {
	return s.approversUnder(req, s.CurrentTools()[req.Tool])
}

// MayVote is the one eligibility rule for a vote: user must be one of the
// request's approvers (directly or through a user group) and still be one
// of its tool's in the configuration in force (Tool.configuredApprovers). A
// request keeps the approvers, quorum and tier frozen on it at intake, but
// removing someone from a tool and reloading takes their power over the
// requests already waiting and over the writes that need review, which
// never expire. To approve, user may be neither whoever the request was
// made for (ErrSelfApproval) nor an owner of the agent that asked
// (ErrOwnerApproval). A frozen approver whom the configuration no longer
// lists gets ErrNoLongerApprover (ErrToolRemoved when the tool itself is
// gone), anyone else ErrNotAllowed. A reject needs only the approver
// conditions. Once a round is escalated, a tool with
// escalate_adds_approvers counts escalate_to among its approvers
// (escalatedApprover).
func (s *Service) MayVote(ctx context.Context, req store.Request, user string, verdict store.Verdict) error {
	_, err := s.eligible(ctx, req, user, verdict)
	return err
}

// eligible is MayVote, returning the tool as configured now for a vote it
// allows.
func (s *Service) eligible(ctx context.Context, req store.Request, user string, verdict store.Verdict) (Tool, error) {
	if user == "" {
		return Tool{}, ErrNotAllowed
	}
	if verdict == store.VerdictApprove {
		if req.RequestedFor != "" && samePerson(req.RequestedFor, user) {
			return Tool{}, ErrSelfApproval
		}
		owner, err := s.isAmong(ctx, s.currentOwners()[req.RequestedBy], user)
		if err != nil {
			return Tool{}, err
		}
		if owner {
			return Tool{}, ErrOwnerApproval
		}
	}
	// One read of the configuration, so that a reload in between cannot
	// mix two of them in one answer.
	tool, configured := s.CurrentTools()[req.Tool]
	frozen, err := s.isAmong(ctx, s.approversUnder(req, tool), user)
	if err != nil {
		return Tool{}, err
	}
	if frozen && configured {
		still, err := s.isAmong(ctx, tool.configuredApprovers(), user)
		if err != nil || still {
			return tool, err
		}
	}
	// Escalation reads the configuration in force, so it needs no second
	// check: a frozen approver whom the configuration now names only in
	// escalate_to (with escalate_adds_approvers) votes as one.
	if configured {
		escalated, err := s.escalatedApprover(ctx, req, tool, user)
		if err != nil || escalated {
			return tool, err
		}
	}
	switch {
	case !frozen:
		return Tool{}, ErrNotAllowed
	case !configured:
		return Tool{}, ErrToolRemoved
	}
	return Tool{}, ErrNoLongerApprover
}

// approversUnder is Approvers(req) with the tool as read once by the caller.
func (s *Service) approversUnder(req store.Request, tool Tool) []string {
	if req.Policy.Approvers != nil {
		return req.Policy.Approvers
	}
	return tool.Approvers
}

// isAmong reports whether user is one of ids, directly or through a user
// group among them.
func (s *Service) isAmong(ctx context.Context, ids []string, user string) (bool, error) {
	for _, id := range ids {
		if !isGroupID(id) && id == user {
			return true, nil
		}
	}
	if s.Groups == nil {
		return false, nil
	}
	for _, id := range ids {
		if !isGroupID(id) {
			continue
		}
		members, err := s.Groups.GroupMembers(ctx, id)
		if err != nil {
			return false, fmt.Errorf("resolving user group %s: %w", id, err)
		}
		if slices.Contains(members, user) {
			return true, nil
		}
	}
	return false, nil
}

// refusedBecause names, for the audit, why MayVote refused; refused is
// false for an error that is no refusal (a user group that could not be
// resolved), which is returned unaudited.
func refusedBecause(err error) (reason string, refused bool) {
	switch {
	case errors.Is(err, ErrToolRemoved):
		return "tool_not_configured", true
	case errors.Is(err, ErrNoLongerApprover):
		return "no_longer_approver", true
	case errors.Is(err, ErrOwnerApproval):
		return "agent_owner", true
	case errors.Is(err, ErrSelfApproval):
		return "self_approval", true
	case errors.Is(err, ErrNotAllowed):
		return "not_an_approver", true
	}
	return "", false
}

// Resolution asks to settle an execution that needs a human (docs/STATES.md).
type Resolution struct {
	RequestID   string
	ExecutionID int64
	Action      string // what the executor is asked to do
	By          string // the clicker, as printed (identity.ID.String)
	Via         string // the surface it came through (bot.Via, inbox.Via)
}

// AuthorizeResolution returns the request when by may resolve its execution.
// Marking a write succeeded or failed, or resending it, decides as much as an
// approval does (a resend to a provider that ignores keys may write twice),
// so the rule is MayVote's for an approval: one of the request's approvers
// whom the configuration in force still lists (else ErrNoLongerApprover),
// neither whoever it was made for (ErrSelfApproval) nor an owner of its agent
// (ErrOwnerApproval); anyone else gets ErrNotAllowed. Each refusal is audited
// as resolution_refused; a missing request is ErrNotFound.
func (s *Service) AuthorizeResolution(ctx context.Context, r Resolution) (store.Request, error) {
	req, err := s.DB.RequestByID(ctx, r.RequestID)
	if err != nil {
		return store.Request{}, err
	}
	if err := s.MayVote(ctx, req, r.By, store.VerdictApprove); err != nil {
		if reason, refused := refusedBecause(err); refused {
			s.refuse(ctx, req, r.By, store.EventResolutionRefused, reason,
				map[string]any{"action": r.Action, "execution_id": r.ExecutionID, "via": r.Via})
		}
		return store.Request{}, err
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
func (s *Service) refuse(ctx context.Context, req store.Request, actor string, kind store.EventKind, reason string, data map[string]any) {
	data["reason"] = reason
	err := s.DB.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: actor, Kind: kind, Data: data})
	s.Logger.Warn(strings.ReplaceAll(string(kind), "_", " "), slog.String("key", req.Key), slog.String("by", actor), slog.String("reason", reason))
	if err != nil {
		s.Logger.Error("auditing a refused attempt", slog.String("key", req.Key), slog.String("kind", string(kind)), slog.String("error", err.Error()))
	}
}

// requestTTL is how long a new request of t waits for its decision.
func requestTTL(t Tool) time.Duration {
	if t.RequestTTL > 0 {
		return t.RequestTTL
	}
	return DefaultRequestTTL
}

func maxAttempts(t Tool) int {
	if t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	return DefaultMaxAttempts
}
