package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/internal/startstop"
)

// batchTimeout bounds one batch's statement. It runs on its own context:
// the statement must finish even if its callers have gone, since they may
// retry, and a half-known outcome is worse than a completed one.
const batchTimeout = 30 * time.Second

// batch gathers calls that arrive while earlier ones run: each worker takes
// whatever is queued, up to maxBatch, and serves it with one call of do.
// With a single caller a batch is just that caller. IntakeBatcher is built
// on it.
type batch[In, Out any] struct {
	// do serves ins in order, one Out per In; an error fails the whole
	// batch, whose calls are then served one by one (see serve).
	do       func(ctx context.Context, ins []In) ([]Out, error)
	queue    chan *batchCall[In, Out]
	maxBatch int
	workers  int
	stopErr  error // what calls get once Stop has ended the workers

	startstop.Base // Start runs the workers, Stop ends them and waits
}

type batchCall[In, Out any] struct {
	in   In
	done chan batchResult[Out]
}

type batchResult[Out any] struct {
	out Out
	err error
}

func newBatch[In, Out any](workers, maxBatch int, stopErr error, do func(context.Context, []In) ([]Out, error)) *batch[In, Out] {
	return &batch[In, Out]{
		do: do, queue: make(chan *batchCall[In, Out], maxBatch*workers),
		maxBatch: maxBatch, workers: workers, stopErr: stopErr,
	}
}

// call queues in and waits for its batch's answer. If ctx ends first, the
// batch may still run.
func (b *batch[In, Out]) call(ctx context.Context, in In) (Out, error) {
	var zero Out
	stopped := b.Stopped()
	c := &batchCall[In, Out]{in: in, done: make(chan batchResult[Out], 1)}
	select {
	case b.queue <- c:
	case <-stopped:
		return zero, b.stopErr
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	select {
	case r := <-c.done:
		return r.out, r.err
	case <-stopped:
		return zero, b.stopErr
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Start runs the workers until Stop, not until ctx ends: calls still
// finishing on shutdown need them. Stop (the base's) ends them and waits
// for the batches being served, whose statements batchTimeout bounds;
// calls fail afterwards.
func (b *batch[In, Out]) Start(ctx context.Context) error {
	if _, err := b.StartInit(ctx); err != nil {
		return fmt.Errorf("starting the batcher: %w", err)
	}
	for range b.workers {
		if err := b.Go(b.work); err != nil {
			return err
		}
	}
	return nil
}

// work serves batches until Stop begins.
func (b *batch[In, Out]) work() {
	stopping := b.Stopping()
	for {
		select {
		case <-stopping:
			return
		case first := <-b.queue:
			b.serve(b.collect(first))
		}
	}
}

// collect takes what is already queued behind first, without waiting.
func (b *batch[In, Out]) collect(first *batchCall[In, Out]) []*batchCall[In, Out] {
	calls := []*batchCall[In, Out]{first}
	for len(calls) < b.maxBatch {
		select {
		case c := <-b.queue:
			calls = append(calls, c)
		default:
			return calls
		}
	}
	return calls
}

// serve answers every call in calls. When do fails for a batch of several,
// one member may be the cause (a value the database refuses), so each call
// is served again alone: no call is ever failed by another. A member whose
// first attempt committed before the batch failed (PostgreSQL's insert reads
// conflicting keys after its statement) finds its row on the retry, as a
// replay of the same write. A store out of reach, or a batch that used up
// its time, would fail each call alone as well, one after the other, so
// those failures are answered at once.
func (b *batch[In, Out]) serve(calls []*batchCall[In, Out]) {
	outs, err := b.run(calls)
	if err != nil && len(calls) > 1 && !IsUnavailable(err) && !errors.Is(err, context.DeadlineExceeded) {
		for _, c := range calls {
			b.serve([]*batchCall[In, Out]{c})
		}
		return
	}
	for i, c := range calls {
		r := batchResult[Out]{err: err}
		if err == nil {
			r.out = outs[i]
		}
		c.done <- r
	}
}

// run calls do once for calls, on a context of its own.
func (b *batch[In, Out]) run(calls []*batchCall[In, Out]) ([]Out, error) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	ins := make([]In, len(calls))
	for i, c := range calls {
		ins[i] = c.in
	}
	return b.do(ctx, ins)
}
