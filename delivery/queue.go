package delivery

import (
	"context"
	"time"
)

// Queue is where a Worker's items come from and where their outcomes go:
// the ledger's outbox, or its callbacks.
type Queue[T any] interface {
	// Claim takes up to limit due items, each left to this worker for
	// lease.
	Claim(ctx context.Context, limit int, lease time.Duration) ([]T, error)
	// Renew moves the leases of held items to lease from now and returns
	// them as renewed, in their order (an item whose claim carries its
	// lease comes back with the new one; one that is no longer held comes
	// back as it was).
	Renew(ctx context.Context, held []T, lease time.Duration) ([]T, error)
	// Attempts is how many times item was claimed, this claim included.
	Attempts(item T) int
	// Record writes an attempt's outcome on item (as last renewed), and
	// its metrics and log line.
	Record(ctx context.Context, item T, o Outcome) error
}
