package store

import "time"

// Event is one entry of a request's append-only audit trail.
type Event struct {
	ID        int64
	RequestID string
	At        time.Time
	Actor     string
	Kind      string
	Data      map[string]any
}
