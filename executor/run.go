package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/internal/startstop"
)

// MaxShutdownGrace caps ShutdownGrace.
const MaxShutdownGrace = time.Minute

// recordGrace is what ShutdownGrace allows for recording outcomes.
const recordGrace = 5 * time.Second

// ShutdownGrace is how long Stop should be given for every execution in
// progress to reach its outcome: the longest a claimed execution can take (a
// precondition check and a send, each bounded by its tool's timeout) and 5s
// to record it, capped at MaxShutdownGrace.
func (e *Executor) ShutdownGrace() time.Duration {
	longest := time.Duration(0)
	for _, t := range e.toolset.Load().tools {
		d := t.Timeout
		if t.Checker != nil {
			d += t.Timeout
		}
		longest = max(longest, d)
	}
	return min(longest+recordGrace, MaxShutdownGrace)
}

// Start runs Lanes dispatch loops (Config.Wake and Config.Poll drive them;
// see run) and returns. The loops stop claiming when ctx
// ends or Stop is called; Stop waits for what they have claimed.
func (e *Executor) Start(ctx context.Context) error {
	ctx, err := e.StartInit(ctx)
	switch {
	case errors.Is(err, startstop.ErrStopped):
		return ErrStopped
	case err != nil:
		return fmt.Errorf("starting the executor: %w", err)
	}
	if err := e.Go(func() { e.run(ctx, e.wake, e.poll) }); err != nil {
		return ErrStopped // Stop began between the two calls
	}
	return nil
}

// Stop stops claiming and waits until every execution in progress, whether
// claimed by Start's loops or a DispatchOnce call, has its outcome
// recorded. Shutdown does not cut a send short: it runs to its answer or its
// tool's timeout. If ctx ends first, the sends still in flight are cancelled,
// as a crash would end them: their claims expire and the reconciler settles
// them. Stop returns once everything has unwound, with an error if ctx cut it
// short. After Stop, Start, DispatchOnce and Drain return ErrStopped.
func (e *Executor) Stop(ctx context.Context) error {
	if err := e.Base.Stop(ctx); err != nil {
		return fmt.Errorf("stopping the executor: %w; the sends still in flight were cut off, and the reconciler settles them", context.Cause(ctx))
	}
	return nil
}

// enter registers a dispatch with Stop, unless the executor is stopping or
// ctx has ended. The context it returns is not cancelled with ctx, only when
// Stop's grace ends: what is claimed runs to its outcome, which is recorded.
func (e *Executor) enter(ctx context.Context) (context.Context, func(), error) {
	work, leave, err := e.Enter(ctx)
	if errors.Is(err, startstop.ErrStopped) {
		return nil, nil, ErrStopped
	}
	return work, leave, err
}

// run keeps Lanes dispatch loops going until ctx ends or Stop is called, and
// returns once they and the executions they claimed have ended. A
// notification on wake (an execution became ready; see
// postgres.Listener.SubscribeReady) starts one idle lane, so a single approval
// costs one claim; a lane whose claim comes back full starts another, so a
// backlog is drained by all of them. If poll is positive every lane also
// looks at least that often; with poll 0 the cron's dispatch sweep is the
// safety net.
func (e *Executor) run(ctx context.Context, wake <-chan struct{}, poll time.Duration) {
	r := &runner{lanes: make([]*lane, e.lanes)}
	for i := range r.lanes {
		r.lanes[i] = &lane{wake: make(chan struct{}, 1)}
	}
	stopping := e.Stopping()
	var lanes sync.WaitGroup
	defer lanes.Wait()
	for _, l := range r.lanes {
		lanes.Go(func() { e.runLane(ctx, r, l, poll) })
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-wake:
			r.start(nil)
		}
	}
}

type runner struct{ lanes []*lane }

type lane struct {
	wake chan struct{}
	busy atomic.Bool
}

// start wakes one idle lane other than except; when every lane is busy it
// leaves each a wake-up, so the row that prompted it is claimed by whichever
// finishes first.
func (r *runner) start(except *lane) {
	for _, l := range r.lanes {
		if l != except && !l.busy.Load() {
			select {
			case l.wake <- struct{}{}:
				return
			default:
			}
		}
	}
	for _, l := range r.lanes {
		if l != except {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (e *Executor) runLane(ctx context.Context, r *runner, l *lane, poll time.Duration) {
	var tick <-chan time.Time
	if poll > 0 {
		ticker := time.NewTicker(poll)
		defer ticker.Stop()
		tick = ticker.C
	}
	full := func() { r.start(l) }
	stopping := e.Stopping()
	for {
		select {
		case <-ctx.Done():
			return
		case <-stopping:
			return
		case <-l.wake:
		case <-tick:
		}
		l.busy.Store(true)
		for {
			n, err := e.dispatch(ctx, full)
			if err != nil && ctx.Err() == nil && !errors.Is(err, ErrStopped) {
				e.logger.Error("dispatch failed", slog.String("error", err.Error()))
			}
			if err != nil || n < e.batch {
				break
			}
		}
		l.busy.Store(false)
	}
}

// Drain runs DispatchOnce until a claim comes back short of a full batch.
func (e *Executor) Drain(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := e.DispatchOnce(ctx)
		total += n
		if err != nil || n < e.batch {
			return total, err
		}
	}
}
