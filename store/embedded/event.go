package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// appendEvent appends an audit event in the caller's transaction.
func appendEvent(ctx context.Context, q querier, requestID string, at time.Time, actor, kind string, data map[string]any) error {
	raw, err := encodeData(data)
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO events (request_id, at, actor, kind, data) VALUES (?, ?, ?, ?, ?)`,
		requestID, micros(at), actor, kind, raw); err != nil {
		return fmt.Errorf("appending event %s: %w", kind, translate(err))
	}
	return nil
}

// AppendEvent appends an audit event; a zero At means the current clock.
func (s *Store) AppendEvent(ctx context.Context, e store.Event) error {
	at := e.At
	if at.IsZero() {
		at = clock(nil)
	}
	return s.write(ctx, func(tx *writeTx) error {
		return appendEvent(ctx, tx, e.RequestID, at, e.Actor, e.Kind, e.Data)
	})
}

// EventsFor returns a request's audit trail, oldest first.
func (s *Store) EventsFor(ctx context.Context, requestID string) ([]store.Event, error) {
	id, _ := canonicalID(requestID)
	rows, err := s.reader.QueryContext(ctx, `SELECT id, request_id, at, actor, kind, data
FROM events WHERE request_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", translate(err))
	}
	events, err := collect(rows, func(row scanner) (store.Event, error) {
		var (
			e   store.Event
			at  int64
			raw string
		)
		if err := row.Scan(&e.ID, &e.RequestID, &at, &e.Actor, &e.Kind, &raw); err != nil {
			return store.Event{}, err
		}
		e.At = fromMicros(at)
		var err error
		e.Data, err = decodeData(raw)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", translate(err))
	}
	return events, nil
}
