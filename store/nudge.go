package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// NudgeKind is a thread reply that asks for a decision still missing: a
// reminder to the approvers, or an escalation to someone else. Values are
// what the outbox row's data names under "nudge" and what metrics label.
type NudgeKind string

// Nudge kinds.
const (
	NudgeReminder   NudgeKind = "reminder"
	NudgeEscalation NudgeKind = "escalation"
)

// Event is the audit event kind a queued nudge writes.
func (k NudgeKind) Event() EventKind {
	switch k {
	case NudgeReminder:
		return EventReminded
	case NudgeEscalation:
		return EventEscalated
	}
	return EventKind(k)
}

// DueNudgesParams asks for the pending requests of one tool that have
// waited at least After in their current round for a nudge of Kind they
// have not had.
type DueNudgesParams struct {
	Kind  NudgeKind
	Tool  string
	After time.Duration
	Now   *time.Time // nil: the database clock
	Limit int
}

// NewNudge is a reminder or escalation to queue for one request round.
// Mention lists the Slack ids (users, user groups) the reply names; Data
// is kept on the outbox row and the audit event beside them.
type NewNudge struct {
	Kind      NudgeKind
	RequestID string
	Round     int
	Mention   []string
	Data      map[string]any
}

// PendingTool is how many requests of a tool wait for a decision, and
// since when the longest of them has waited (its current round's start).
type PendingTool struct {
	Tool   string
	Count  int
	Oldest time.Time
	Now    time.Time // the database clock when counted
}

// NudgeData is the outbox row's data for n: the kind under "nudge" (the
// unique index's key), the mentions space-separated, and n.Data.
func NudgeData(n NewNudge) map[string]any {
	data := make(map[string]any, len(n.Data)+2)
	for k, v := range n.Data {
		data[k] = v
	}
	data["nudge"] = string(n.Kind)
	data["mention"] = strings.Join(n.Mention, " ")
	return data
}

// QueueNudges queues each nudge whose request is still pending in its
// round, with its audit event, in one transaction, and returns those it
// queued. A nudge already queued for that round and kind (by another
// replica's sweep, say) is left out: the unique index on the outbox makes
// each one once-only.
func (l *Ledger) QueueNudges(ctx context.Context, nudges []NewNudge) (queued []NewNudge, err error) {
	err = l.inTx(ctx, func(ex Executor) error {
		queued = nil
		var events []Event
		for _, n := range nudges {
			if !IsUUID(n.RequestID) {
				continue
			}
			data := NudgeData(n)
			at, ok, err := ex.QueueNudge(ctx, OutboxThreadReply, n.RequestID, n.Round, data)
			if err != nil {
				return fmt.Errorf("queueing %s: %w", n.Kind, err)
			}
			if !ok {
				continue
			}
			queued = append(queued, n)
			eventData := map[string]any{"round": n.Round}
			for k, v := range data {
				if k != "nudge" {
					eventData[k] = v
				}
			}
			events = append(events, Event{RequestID: n.RequestID, At: at, Actor: SystemActor, Kind: n.Kind.Event(), Data: eventData})
		}
		return write(ctx, ex, events, nil)
	})
	if err != nil {
		return nil, err
	}
	return queued, nil
}
