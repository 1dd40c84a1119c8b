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
	stopErr  error         // what calls get once Run has ended
	stopped  chan struct{} // closed when Run has ended

	startstop.Base // Start and Stop run Run in the background
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
		maxBatch: maxBatch, workers: workers, stopErr: stopErr, stopped: make(chan struct{}),
	}
}

// call queues in and waits for its batch's answer. If ctx ends first, the
// batch may still run.
func (b *batch[In, Out]) call(ctx context.Context, in In) (Out, error) {
	var zero Out
	c := &batchCall[In, Out]{in: in, done: make(chan batchResult[Out], 1)}
	select {
	case b.queue <- c:
	case <-b.stopped:
		return zero, b.stopErr
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	select {
	case r := <-c.done:
		return r.out, r.err
	case <-b.stopped:
		return zero, b.stopErr
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Done is closed once Run has ended.
func (b *batch[In, Out]) Done() <-chan struct{} { return b.stopped }

// Start runs Run in the background until Stop, not until ctx ends: calls
// still finishing on shutdown need it. Stop (the base's) ends it and waits
// for the batch being served, whose statement batchTimeout bounds.
func (b *batch[In, Out]) Start(ctx context.Context) error {
	ctx, err := b.StartInit(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("starting the batcher: %w", err)
	}
	ctx = b.UntilStopping(ctx)
	return b.Go(func() { b.Run(ctx) })
}

// Run serves batches from its workers until ctx ends; calls fail afterwards.
func (b *batch[In, Out]) Run(ctx context.Context) {
	defer close(b.stopped)
	done := make(chan struct{})
	for range b.workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-ctx.Done():
					return
				case first := <-b.queue:
					b.serve(b.collect(first))
				}
			}
		}()
	}
	for range b.workers {
		<-done
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
