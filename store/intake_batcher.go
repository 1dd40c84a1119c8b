package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// IntakeBatcher group-commits new requests. Intents that arrive while a batch
// is committing wait together and go in the next one: one statement and one
// commit for all of them (InsertRequests). An agent hears 201 only after its
// request's commit, so durability is unchanged; under load the cost of a
// commit is shared, and with a single caller a batch is just that caller.
type IntakeBatcher struct {
	db       Store
	queue    chan *queuedInsert
	maxBatch int
	flushers int
	stopped  chan struct{} // closed when Run has ended
}

type queuedInsert struct {
	p    NewRequest
	done chan InsertResult
	err  error
}

// ErrBatcherStopped is returned by Insert once the batcher's Run has ended.
var ErrBatcherStopped = errors.New("intake batcher stopped")

// NewIntakeBatcher returns a batcher that commits up to maxBatch requests at
// a time from flushers concurrent transactions. Run starts it.
func NewIntakeBatcher(db Store, flushers, maxBatch int) *IntakeBatcher {
	return &IntakeBatcher{
		db: db, queue: make(chan *queuedInsert, maxBatch*flushers),
		maxBatch: maxBatch, flushers: flushers, stopped: make(chan struct{}),
	}
}

// Insert stores p as InsertRequest does, in whichever batch it joins. If ctx
// ends before the batch commits, the request may still be stored; a retry of
// the same intent then replays it.
func (b *IntakeBatcher) Insert(ctx context.Context, p NewRequest) (Request, bool, error) {
	if p.EffectStrings == nil {
		// In the caller's goroutine, not the flusher's.
		var err error
		if p.EffectStrings, err = EffectStrings(p.Snapshot); err != nil {
			return Request{}, false, fmt.Errorf("inserting request: %w", err)
		}
	}
	q := &queuedInsert{p: p, done: make(chan InsertResult, 1)} // q.err is set before done is sent
	select {
	case b.queue <- q:
	case <-b.stopped:
		return Request{}, false, ErrBatcherStopped
	case <-ctx.Done():
		return Request{}, false, ctx.Err()
	}
	select {
	case r := <-q.done:
		return r.Request, r.Inserted, q.err
	case <-b.stopped:
		return Request{}, false, ErrBatcherStopped
	case <-ctx.Done():
		return Request{}, false, ctx.Err()
	}
}

// Done is closed once Run has ended.
func (b *IntakeBatcher) Done() <-chan struct{} { return b.stopped }

// Run flushes batches until ctx ends; Insert fails afterwards.
func (b *IntakeBatcher) Run(ctx context.Context) {
	defer close(b.stopped)
	flushersDone := make(chan struct{})
	for range b.flushers {
		go func() {
			defer func() { flushersDone <- struct{}{} }()
			for {
				select {
				case <-ctx.Done():
					return
				case first := <-b.queue:
					b.flush(b.collect(first))
				}
			}
		}()
	}
	for range b.flushers {
		<-flushersDone
	}
}

// collect takes what is already queued behind first, without waiting.
func (b *IntakeBatcher) collect(first *queuedInsert) []*queuedInsert {
	batch := []*queuedInsert{first}
	for len(batch) < b.maxBatch {
		select {
		case q := <-b.queue:
			batch = append(batch, q)
		default:
			return batch
		}
	}
	return batch
}

// flush commits one batch. Callers with the same key share one row: the first
// of them carries it, and the others get it back as a replay, which the
// caller checks against its own basis like any replay.
func (b *IntakeBatcher) flush(batch []*queuedInsert) {
	// The statement must finish even if the callers have gone: they may
	// retry, and a half-known outcome is worse than a completed one.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var unique []NewRequest
	seen := make(map[string]bool, len(batch))
	for _, q := range batch {
		if !seen[q.p.Key] {
			seen[q.p.Key] = true
			unique = append(unique, q.p)
		}
	}
	results, err := b.db.InsertRequests(ctx, unique, batch[0].p.Now)
	byKey := make(map[string]InsertResult, len(results))
	for _, r := range results {
		byKey[r.Key] = r
	}
	for _, q := range batch {
		r := byKey[q.p.Key]
		if seen[q.p.Key] {
			seen[q.p.Key] = false // the first caller for a key gets the insert
		} else {
			r.Inserted = false
		}
		q.err = err
		q.done <- r
	}
}
