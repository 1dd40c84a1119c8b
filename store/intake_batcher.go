package store

import (
	"context"
	"errors"
	"fmt"
)

// IntakeBatcher group-commits new requests. Intents that arrive while a batch
// is committing wait together and go in the next one: one statement and one
// commit for all of them (InsertRequests). An agent hears 201 only after its
// request's commit, so durability is unchanged; under load the cost of a
// commit is shared, and with a single caller a batch is just that caller.
type IntakeBatcher struct {
	*batch[NewRequest, InsertResult]
}

// ErrBatcherStopped is returned by Insert once the batcher's Run has ended.
var ErrBatcherStopped = errors.New("intake batcher stopped")

// NewIntakeBatcher returns a batcher that commits up to maxBatch requests at
// a time from flushers concurrent transactions. Run starts it.
func NewIntakeBatcher(db Store, flushers, maxBatch int) *IntakeBatcher {
	return &IntakeBatcher{newBatch(flushers, maxBatch, ErrBatcherStopped,
		func(ctx context.Context, ps []NewRequest) ([]InsertResult, error) { return insertBatch(ctx, db, ps) })}
}

// Insert stores p as InsertRequest does, in whichever batch it joins. If ctx
// ends before the batch commits, the request may still be stored; a retry of
// the same intent then replays it.
func (b *IntakeBatcher) Insert(ctx context.Context, p NewRequest) (InsertResult, error) {
	if p.EffectStrings == nil {
		// In the caller's goroutine, not the flusher's.
		var err error
		if p.EffectStrings, err = EffectStrings(p.Snapshot); err != nil {
			return InsertResult{}, fmt.Errorf("inserting request: %w", err)
		}
	}
	return b.call(ctx, p)
}

// insertBatch commits one batch. Callers with the same key share one row: the
// first of them carries it, and the others get it back as a replay, which the
// caller checks against its own basis like any replay.
func insertBatch(ctx context.Context, db Store, ps []NewRequest) ([]InsertResult, error) {
	var unique []NewRequest
	seen := make(map[string]bool, len(ps))
	for _, p := range ps {
		if !seen[p.Key] {
			seen[p.Key] = true
			unique = append(unique, p)
		}
	}
	results, err := db.InsertRequests(ctx, unique, ps[0].Now)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]InsertResult, len(results))
	for i, r := range results {
		byKey[unique[i].Key] = r // a pruned key's result has no request to name it
	}
	out := make([]InsertResult, len(ps))
	for i, p := range ps {
		out[i] = byKey[p.Key]
		if seen[p.Key] {
			seen[p.Key] = false // the first caller for a key gets the insert
		} else if out[i].Inserted {
			// A later caller shares the row inserted in this batch, whose
			// card post was queued with it.
			out[i].Inserted, out[i].PostQueued = false, true
		}
	}
	return out, nil
}
