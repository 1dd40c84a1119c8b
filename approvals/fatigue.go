package approvals

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/countersign/countersign/store"
)

// The sources of a decision, as Metrics.Decisions labels them.
const (
	SourceHuman  = "human"
	SourcePolicy = "policy"
	SourceGrant  = "grant"
)

// RubberStampWithin is how soon after its card an approval counts as a
// rubber stamp: too soon to have read the effect.
const RubberStampWithin = 5 * time.Second

// DecisionSource names who decided, from a decision's via: a rule of the
// tool's policy, a standing grant, or a person on any surface.
func DecisionSource(via string) string {
	switch via {
	case ViaPolicy:
		return SourcePolicy
	case ViaGrant:
		return SourceGrant
	}
	return SourceHuman
}

// decidedAtIntake counts a decision stored with its request: a policy's
// allow or deny, a grant's approval.
func (m *Metrics) decidedAtIntake(d *store.AutoDecision) {
	if m == nil || d == nil {
		return
	}
	m.Decisions.WithLabelValues(DecisionSource(d.Via), string(d.Verdict)).Inc()
}

// countReview counts what a reviewer's vote says of review fatigue: whom
// approvals come from and how fast, and, for the vote that decided its
// round, the decision, how long it took and whether a shadow rule would
// have spared the review. Only votes that were cast count (a repeat click
// changes nothing).
func (s *Service) countReview(ctx context.Context, d Decision, out Outcome) {
	m := s.Metrics
	if m == nil || !(out.Created || out.Counted) {
		return
	}
	req := out.Request
	if d.Verdict == store.VerdictApprove {
		m.ReviewerApprovals.WithLabelValues(d.DecidedBy).Inc()
		if shown, ok := s.shownAt(ctx, req, d.Round, d.Via); ok && out.Vote.VotedAt.Sub(shown) < RubberStampWithin {
			m.RubberStamps.Inc()
		}
	}
	if !out.Created {
		return
	}
	m.Decisions.WithLabelValues(SourceHuman, string(out.Decision.Verdict)).Inc()
	m.TimeToDecision.Observe(max(out.Decision.DecidedAt.Sub(req.RoundStartedAt), 0).Seconds())
	if out.Decision.Verdict == store.VerdictApprove && shadowAllows(req.Policy) {
		m.ShadowAllowed.Inc()
	}
}

// shownAt is when the reviewer could first see the round: when its card was
// posted on the surface the vote came from, or, on a surface without cards
// (the inbox lists a request as its round starts), when the round began. ok
// is false when the card could not be read; the vote is then not judged.
func (s *Service) shownAt(ctx context.Context, req store.Request, round int, surface string) (time.Time, bool) {
	c, err := s.DB.CardFor(ctx, req.ID, round, surface)
	switch {
	case err == nil:
		return c.PostedAt, true
	case errors.Is(err, store.ErrNotFound):
		return req.RoundStartedAt, true
	}
	s.Logger.Warn("reading the card a vote came from", slog.String("key", req.Key), slog.String("error", err.Error()))
	return time.Time{}, false
}

// shadowAllows reports whether a shadow rule that matched the request
// would have allowed it.
func shadowAllows(p store.Policy) bool {
	return slices.ContainsFunc(p.Shadow, func(m store.ShadowMatch) bool { return m.Verdict == VerdictAllow })
}
