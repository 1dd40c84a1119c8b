package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event is one entry of a request's append-only audit trail.
type Event struct {
	ID        int64          `db:"id"`
	RequestID string         `db:"request_id"`
	At        time.Time      `db:"at"`
	Actor     string         `db:"actor"`
	Kind      string         `db:"kind"`
	Data      map[string]any `db:"data"`
}

// AppendEventTx appends an audit event; a zero At means the database clock.
func AppendEventTx(ctx context.Context, db DBTX, e Event) error {
	data, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Errorf("encoding event data: %w", err)
	}
	if e.Data == nil {
		data = []byte("{}")
	}
	var at *time.Time
	if !e.At.IsZero() {
		at = &e.At
	}
	if _, err := db.Exec(ctx, `INSERT INTO events (request_id, at, actor, kind, data)
VALUES ($1, coalesce($2::timestamptz, now()), $3, $4, $5)`, e.RequestID, at, e.Actor, e.Kind, data); err != nil {
		return fmt.Errorf("appending event %s: %w", e.Kind, err)
	}
	return nil
}

// EventsFor returns a request's audit trail, oldest first.
func EventsFor(ctx context.Context, db DBTX, requestID string) ([]Event, error) {
	rows, err := db.Query(ctx, `SELECT id, request_id::text AS request_id, at, actor, kind, data
FROM events WHERE request_id = $1 ORDER BY id`, requestID)
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByName[Event])
	if err != nil {
		return nil, fmt.Errorf("reading events: %w", err)
	}
	return events, nil
}
