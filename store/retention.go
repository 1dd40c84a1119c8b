package store

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/internal/mutant"
)

// Tombstone is what remains of a pruned request: enough to keep its key
// from ever running twice, and nothing the agent sent beyond the key. A
// replay of the key with the same basis is answered with Status; another
// basis is key_reused.
type Tombstone struct {
	Key       string
	BasisHash string
	// Agent is the agent whose request it was.
	Agent string
	// Status is the final outcome: rejected, expired or cancelled (the
	// request's status), or succeeded or failed (its execution's state).
	Status    string
	SettledAt time.Time
	PrunedAt  time.Time
}

// Prunable is a settled request the prune sweep may remove, as
// SettledRequests reads it: its id and the tombstone it leaves.
type Prunable struct {
	RequestID string
	Tombstone
}

// SettledParams selects up to Limit requests settled before Before (see
// SettledRequests). FinalStatuses are the request statuses that settle a
// request by themselves; an approved request (Approved) is settled when its
// newest execution is in one of FinalStates.
type SettledParams struct {
	Before        time.Time
	Limit         int
	FinalStatuses []RequestStatus
	Approved      RequestStatus
	FinalStates   []ExecState
}

// PruneParams is one run of the prune sweep: the requests settled before
// Before go, BatchSize (zero: DefaultPruneBatch) in each transaction.
type PruneParams struct {
	Before    time.Time
	BatchSize int
}

// DefaultPruneBatch is how many requests one prune transaction removes: few
// enough that the row locks it holds last milliseconds.
const DefaultPruneBatch = 500

// settledParams is the rule of what "settled" means (Settled), handed to the
// driver's statement so it is written here once.
func settledParams(before time.Time, limit int) SettledParams {
	p := SettledParams{Before: before, Limit: limit}
	p.FinalStatuses, p.Approved, p.FinalStates = SettledRule()
	return p
}

// Prune removes the requests settled before p.Before with everything that
// hangs on them (decisions, votes, executions, cards, outbox rows,
// callbacks), each leaving its Tombstone, and returns how many went. It
// works in batches of p.BatchSize, each a short transaction of its own that
// skips rows other transactions hold, so intake and review never wait on
// it for long. A request that is pending, or whose execution has not
// settled, is never pruned, nor one whose callback is still being
// delivered. The audit events stay: they hold ids, kinds, actors, times
// and codes, never effect values.
func (l *Ledger) Prune(ctx context.Context, p PruneParams) (int, error) {
	batch := cmp.Or(p.BatchSize, DefaultPruneBatch)
	total := 0
	for {
		n, err := l.pruneBatch(ctx, settledParams(p.Before, batch))
		total += n
		if err != nil {
			return total, err
		}
		if n < batch {
			return total, nil
		}
	}
}

// pruneBatch prunes one batch in one transaction.
func (l *Ledger) pruneBatch(ctx context.Context, p SettledParams) (n int, err error) {
	err = l.inTx(ctx, func(ex Executor) error {
		found, err := ex.SettledRequests(ctx, p)
		if err != nil || len(found) == 0 {
			return err
		}
		tombstones := make([]Tombstone, len(found))
		ids := make([]string, len(found))
		for i, f := range found {
			tombstones[i], ids[i] = f.Tombstone, f.RequestID
		}
		if mutant.On("pruned-runs-again") { // planted bug: pruned without a tombstone
			tombstones = nil
		}
		if err := ex.InsertTombstones(ctx, tombstones); err != nil {
			return err
		}
		if err := ex.DeleteRequests(ctx, ids); err != nil {
			return err
		}
		n = len(found)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("pruning requests: %w", err)
	}
	return n, nil
}
