package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertDecision(ctx context.Context, d store.Decision) (store.Decision, error) {
	rows, err := e.db.Query(ctx, q.Get("insert_decision"), d.RequestID, d.Round, d.Verdict, d.DecidedBy, d.Via, d.PayloadHashSeen, d.DecidedAt, d.Reason)
	return one[store.Decision]("recording decision", rows, err)
}

func (e executor) DecisionFor(ctx context.Context, requestID string, round int) (store.Decision, error) {
	rows, err := e.db.Query(ctx, q.Get("decision_for"), requestID, round)
	return one[store.Decision]("reading decision", rows, err)
}

func (e executor) LatestDecision(ctx context.Context, requestID string) (store.Decision, error) {
	rows, err := e.db.Query(ctx, q.Get("latest_decision"), requestID)
	return one[store.Decision]("reading decision", rows, err)
}

// encode renders event and outbox data; nil is the empty object.
func encode(data map[string]any) (string, error) {
	if data == nil {
		return "{}", nil
	}
	b, err := json.Marshal(data)
	return string(b), err
}

// orNow is t, or nil (the database clock) when t is zero.
func orNow(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (e executor) InsertEvents(ctx context.Context, events []store.Event) error {
	n := len(events)
	ids, ats, actors, kinds, data := make([]string, n), make([]*time.Time, n), make([]string, n), make([]string, n), make([]string, n)
	for i, ev := range events {
		raw, err := encode(ev.Data)
		if err != nil {
			return wrap("encoding event data", err)
		}
		ids[i], ats[i], actors[i], kinds[i], data[i] = ev.RequestID, orNow(ev.At), ev.Actor, string(ev.Kind), raw
	}
	err := e.later(ctx, q.Get("insert_events"),
		ids, ats, actors, kinds, data)
	return wrap("appending events", err)
}

func (e executor) EventsFor(ctx context.Context, requestID string) ([]store.Event, error) {
	rows, err := e.db.Query(ctx, q.Get("events_for"), requestID)
	return collect[store.Event]("reading events", rows, err)
}

func (e executor) InsertOutbox(ctx context.Context, rows []store.NewOutbox) error {
	n := len(rows)
	kinds, ids, rounds, data, ats := make([]string, n), make([]string, n), make([]int32, n), make([]string, n), make([]*time.Time, n)
	coalesce, surfaces, destinations := make([]bool, n), make([]string, n), make([]string, n)
	for i, o := range rows {
		raw, err := encode(o.Data)
		if err != nil {
			return wrap("encoding outbox data", err)
		}
		kinds[i], ids[i], rounds[i], data[i], ats[i] = string(o.Kind), o.RequestID, int32(o.Round), raw, orNow(o.At)
		coalesce[i], surfaces[i], destinations[i] = o.Coalesce, o.Surface, o.Destination
	}
	err := e.later(ctx, q.Get("insert_outbox"),
		kinds, ids, rounds, data, ats, coalesce, surfaces, destinations)
	return wrap("enqueueing deliveries", err)
}
