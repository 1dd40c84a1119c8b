package approvals

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/countersign/countersign/store"
)

// nudgeBatch bounds one read of the nudge sweep.
const nudgeBatch = 100

// NudgeOnce queues the reminders and escalations that are due: for each
// tool with remind_after (escalate_after), one thread reply per pending
// request round that has waited that long since the round began, whose
// card is posted and that has had none of that kind. Each is an outbox row
// with its audit event, written once per round whatever the number of
// replicas sweeping (a unique index); the bot delivers it. It returns how
// many it queued.
func (s *Service) NudgeOnce(ctx context.Context) (int, error) {
	names := make([]string, 0, len(s.CurrentTools()))
	for name := range s.CurrentTools() {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		tool := s.CurrentTools()[name]
		for _, kind := range []store.NudgeKind{store.NudgeReminder, store.NudgeEscalation} {
			n, err := s.nudgeTool(ctx, tool, kind)
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// nudgeTool queues the nudges of one kind due for one tool.
func (s *Service) nudgeTool(ctx context.Context, tool Tool, kind store.NudgeKind) (int, error) {
	after := tool.RemindAfter
	if kind == store.NudgeEscalation {
		after = tool.EscalateAfter
	}
	if after <= 0 {
		return 0, nil
	}
	total := 0
	for {
		due, err := s.DB.DueNudges(ctx, store.DueNudgesParams{Kind: kind, Tool: tool.Name, After: after, Now: s.now(), Limit: nudgeBatch})
		if err != nil || len(due) == 0 {
			return total, err
		}
		nudges := make([]store.NewNudge, len(due))
		for i, req := range due {
			var votes []store.Vote
			if kind == store.NudgeReminder {
				if votes, err = s.DB.VotesFor(ctx, req.ID, req.Round); err != nil {
					return total, err
				}
			}
			nudges[i] = s.nudgeFor(tool, kind, after, req, votes)
		}
		queued, err := s.DB.QueueNudges(ctx, nudges)
		if err != nil {
			return total, err
		}
		for _, n := range queued {
			s.Logger.Info("request "+string(n.Kind.Event()), slog.String("request_id", n.RequestID), slog.Int("round", n.Round),
				slog.Any("mention", n.Mention))
		}
		total += len(queued)
		// A short batch is the last; a batch another replica queued first
		// leaves nothing more for this one either.
		if len(due) < nudgeBatch || len(queued) == 0 {
			return total, nil
		}
	}
}

// nudgeFor is the reply a due request gets. A reminder names the
// request's approvers (its frozen policy's) who have not voted in the round,
// leaving out the person the request is for, who may not approve; a user
// group stays named until the round is decided, since one member's vote
// does not speak for the others. An escalation names escalate_to.
func (s *Service) nudgeFor(tool Tool, kind store.NudgeKind, after time.Duration, req store.Request, votes []store.Vote) store.NewNudge {
	n := store.NewNudge{Kind: kind, RequestID: req.ID, Round: req.Round, Data: map[string]any{"after": after.String()}}
	switch kind {
	case store.NudgeReminder:
		n.Mention = slices.DeleteFunc(slices.Clone(s.Approvers(req)), func(id string) bool {
			return id == req.RequestedFor || slices.ContainsFunc(votes, func(v store.Vote) bool { return v.Voter == id })
		})
	case store.NudgeEscalation:
		n.Mention = slices.Clone(tool.EscalateTo)
		if tool.EscalateAddsApprovers {
			n.Data["adds_approvers"] = true
		}
	}
	return n
}

// escalatedApprover reports whether user may vote on req's current round
// as one of its tool's escalate_to (directly or through a user group): with
// escalate_adds_approvers, from the moment the round's escalation is queued.
// tool is req's tool as configured now.
func (s *Service) escalatedApprover(ctx context.Context, req store.Request, tool Tool, user string) (bool, error) {
	if !tool.EscalateAddsApprovers || user == "" {
		return false, nil
	}
	if escalatee, err := s.isAmong(ctx, tool.EscalateTo, user); err != nil || !escalatee {
		return false, err
	}
	return s.DB.NudgeQueued(ctx, req.ID, req.Round, store.NudgeEscalation)
}
