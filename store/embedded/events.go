package embedded

import (
	"context"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertDecision(ctx context.Context, d store.Decision) (store.Decision, error) {
	return scanDecision(e.tx.QueryRowContext(ctx, q.Get("insert_decision"), canonicalID(d.RequestID), d.Round, d.Verdict,
		d.DecidedBy, d.Via, d.PayloadHashSeen, micros(d.DecidedAt), d.Reason))
}

func (e executor) DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error) {
	return scanDecision(e.read().QueryRowContext(ctx, q.Get("decision_for"), canonicalID(requestID), round))
}

func (e executor) LatestDecision(ctx context.Context, requestID string) (store.Decision, error) {
	return scanDecision(e.read().QueryRowContext(ctx, q.Get("latest_decision"), canonicalID(requestID)))
}

func (e executor) EventsFor(ctx context.Context, requestID string) ([]store.Event, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("events_for"), canonicalID(requestID))
	return collect("reading events", func(row scanner) (store.Event, error) {
		var ev store.Event
		return scanInto("reading event", row, &ev, &ev.ID, &ev.RequestID, at{t: &ev.At}, &ev.Actor, &ev.Kind, jsonText{&ev.Data})
	}, rows, err)
}

func (e executor) InsertOutbox(ctx context.Context, rows []store.NewOutbox) error {
	for _, o := range rows {
		at := micros(e.tx.orClock(o.At))
		if err := e.tx.exec(ctx, "enqueueing "+string(o.Kind), q.Get("insert_outbox"), o.Kind, canonicalID(o.RequestID),
			o.Round, jsonData(o.Data), at, at, o.Coalesce, o.Surface, o.Destination); err != nil {
			return err
		}
	}
	return nil
}
