package store

import (
	"context"
	"errors"
)

// ErrUnavailable marks a store error as the store being out of reach rather
// than refusing the call. Each driver wraps its own such errors with it, in
// one place: PostgreSQL refusing or dropping connections, shutting down or
// starting up, a closed pool; SQLite's file locked past the busy timeout, or
// the store closed.
var ErrUnavailable = errors.New("store unavailable")

// IsUnavailable reports whether err means the store could not be reached, so
// that the same call may succeed once it is back. An error the database
// answered (a constraint, a value it refuses) is not, nor is the caller's own
// cancellation, nor a statement that outlived its deadline on a database
// that answers, nor a failed HTTP call made while deciding.
//
// This is the one place countersign tells an outage from a failure: the
// agent hook answers it 503 unavailable, the inbox and Slack ask to try again
// in a moment, and a failed group commit is not retried member by member.
func IsUnavailable(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled) && errors.Is(err, ErrUnavailable)
}
