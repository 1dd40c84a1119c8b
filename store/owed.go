package store

import (
	"context"
	"maps"
	"time"
)

// firstRound is the round a new request starts in.
const firstRound = 1

// requested is what a new request owes: its "requested" event and the post
// of its card, unless it is decided at intake without one.
func requested(p NewRequest) Owed {
	o := Owed{Events: []Event{{Actor: AgentActor(p.RequestedBy), Kind: EventRequested,
		Data: map[string]any{"key": p.Key, "round": firstRound}}}}
	if shadow := p.Policy.Shadow; len(shadow) > 0 {
		o.Events[0].Data["shadow"] = shadow
	}
	if p.Decided == nil || p.Decided.Card {
		o.Outbox = []NewOutbox{{Kind: OutboxPostCard}}
	}
	return o
}

// claimed is what each claim of worker owes: its "claimed" event (with the
// claim's facts, ClaimFacts) and a card update, and it wakes the request's
// waiters.
func claimed(worker string) Owed {
	return Owed{
		Events:     []Event{{Actor: ExecutorActor(worker), Kind: EventClaimed}},
		Outbox:     []NewOutbox{cardUpdate()},
		WakeChange: true,
	}
}

// ClaimFacts is what a claim adds to the data of the events it owes; a
// batch statement merges the same keys from the row it claims.
func ClaimFacts(c Claim) map[string]any {
	return map[string]any{"attempt": c.Attempts, "execution_id": c.ID, "claim_expires_at": c.ClaimExpiresAt}
}

// transitioned is what an execution's move t owes: its event (actor
// p.Actor), a card update, a thread reply when t asks for one, the callback
// its new state owes, and the wake-ups.
func transitioned(p TransitionParams, t Transition) Owed {
	kind, reply := outcomeEvent(p.From, t)
	o := Owed{
		Events:     []Event{{Actor: p.Actor, Kind: kind, Data: t.EventData}},
		Outbox:     []NewOutbox{cardUpdate()},
		WakeChange: true,
		WakeReady:  wakesReady(t.To),
	}
	if reply != "" {
		o.Outbox = append(o.Outbox, NewOutbox{Kind: OutboxThreadReply, Data: map[string]any{"reason": reply}})
	}
	if event, ok := callbackEventFor(t.To); ok {
		o.Callbacks = []CallbackEvent{event}
	}
	return o
}

// outcomeEvent is the event an execution's move out of from records, and
// the reason of the thread reply it owes ("" for none): an execution that
// fails or needs a person says so in the card's thread.
func outcomeEvent(from ExecState, t Transition) (EventKind, string) {
	switch t.To {
	case ExecSucceeded:
		return EventSucceeded, ""
	case ExecFailed:
		return EventFailed, string(ExecFailed)
	case ExecNeedsReview:
		return EventNeedsReview, string(ExecNeedsReview)
	case ExecUnknown:
		return EventUnknown, ""
	case ExecReady:
		switch {
		case from == ExecClaimed:
			return EventAttempt, ""
		case t.Resend:
			return EventResend, ""
		}
		return EventVerified, ""
	case ExecSuperseded:
		return EventSuperseded, ""
	case ExecClaimed:
		return EventClaimed, ""
	}
	return EventKind(t.To), ""
}

// owing gathers what the rows a transaction moves owe, to write once at its
// end: events, outbox rows and wake-ups. Callbacks need the request's agent
// and are queued row by row (Ledger.queueCallback).
type owing struct {
	events []Event
	outbox []NewOutbox
	wake   Wakeups
}

// add takes o's rows for the row of requestID in round, moved at at.
func (w *owing) add(o Owed, requestID string, round int, at time.Time) {
	for _, e := range o.Events {
		e.RequestID, e.At = requestID, at
		w.events = append(w.events, e)
	}
	for _, r := range o.Outbox {
		r.RequestID, r.Round, r.At = requestID, round, at
		w.outbox = append(w.outbox, r)
	}
	if o.WakeChange {
		w.wake.Changed = append(w.wake.Changed, requestID)
	}
	w.wake.Ready = w.wake.Ready || o.WakeReady
}

// addData is add with extra merged into each event's data.
func (w *owing) addData(o Owed, requestID string, round int, at time.Time, extra map[string]any) {
	events := make([]Event, len(o.Events))
	for i, e := range o.Events {
		data := maps.Clone(e.Data)
		if data == nil {
			data = make(map[string]any, len(extra))
		}
		maps.Copy(data, extra)
		e.Data = data
		events[i] = e
	}
	o.Events = events
	w.add(o, requestID, round, at)
}

// write appends the events and outbox rows and hands the wake-ups to ex, in
// ex's transaction.
func (w *owing) write(ctx context.Context, ex Executor) error {
	if err := write(ctx, ex, w.events, w.outbox); err != nil {
		return err
	}
	return notify(ctx, ex, w.wake)
}
