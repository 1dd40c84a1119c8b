package embedded

import (
	"context"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertDecision(ctx context.Context, d store.Decision) (out store.Decision, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		out, err = scanDecision(tx.QueryRowContext(ctx, q.Get("insert_decision"), canonicalID(d.RequestID), d.Round, d.Verdict, d.DecidedBy, d.Via, d.PayloadHashSeen, micros(d.DecidedAt), d.Reason))
		return wrap("recording decision", err)
	})
	return out, err
}

func (e executor) DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error) {
	return scanDecision(e.read().QueryRowContext(ctx, q.Get("decision_for"), canonicalID(requestID), round))
}

func (e executor) LatestDecision(ctx context.Context, requestID string) (store.Decision, error) {
	return scanDecision(e.read().QueryRowContext(ctx, q.Get("latest_decision"), canonicalID(requestID)))
}

func (e executor) InsertEvents(ctx context.Context, events []store.Event) error {
	return e.write(ctx, func(tx *writeTx) error {
		for _, ev := range events {
			raw, err := encodeData(ev.Data)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, q.Get("insert_events"),
				canonicalID(ev.RequestID), micros(tx.orClock(ev.At)), ev.Actor, ev.Kind, raw); err != nil {
				return wrap("appending event "+ev.Kind, err)
			}
		}
		return nil
	})
}

func (e executor) EventsFor(ctx context.Context, requestID string) ([]store.Event, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("events_for"), canonicalID(requestID))
	return collect("reading events", func(row scanner) (store.Event, error) {
		var (
			ev  store.Event
			at  int64
			raw string
		)
		if err := row.Scan(&ev.ID, &ev.RequestID, &at, &ev.Actor, &ev.Kind, &raw); err != nil {
			return store.Event{}, err
		}
		ev.At = fromMicros(at)
		var err error
		ev.Data, err = decodeData(raw)
		return ev, err
	}, rows, err)
}

func (e executor) InsertOutbox(ctx context.Context, rows []store.NewOutbox) error {
	return e.write(ctx, func(tx *writeTx) error {
		for _, o := range rows {
			raw, err := encodeData(o.Data)
			if err != nil {
				return err
			}
			at := micros(tx.orClock(o.At))
			if _, err := tx.ExecContext(ctx, q.Get("insert_outbox"), o.Kind, canonicalID(o.RequestID), o.Round, raw, at, at); err != nil {
				return wrap("enqueueing "+string(o.Kind), err)
			}
		}
		return nil
	})
}
