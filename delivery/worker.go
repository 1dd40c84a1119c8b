package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/internal/startstop"
)

// Config is what a Worker needs. Queue, Deliver and Lease are required.
type Config[T any] struct {
	// Name says what is delivered, for errors and logs ("outbox",
	// "callback").
	Name  string
	Queue Queue[T]
	// Deliver makes one attempt at item, as it was claimed. A nil error is
	// a delivery; any other is read by Classify.
	Deliver func(ctx context.Context, item T) (Done, error)
	// Classify reads a failed attempt's error; nil: the package's
	// Classify.
	Classify func(error) *Failure
	// Lane groups items that go to one place: a lane's items are worked
	// in order, one at a time, and the lanes at once. Nil: every item is
	// its own lane.
	Lane func(ctx context.Context, item T) string
	// Pacer, when set, holds back the items of a paused lane (put back,
	// not attempted) and is paused by a RateLimited failure.
	Pacer *Pacer
	// Backoff spaces the retries of transient failures.
	Backoff Backoff
	// MaxAttempts fails an item whose transient failure was its
	// MaxAttempts-th attempt; zero leaves giving up to the Queue.
	MaxAttempts int
	Batch       int
	Lease       time.Duration // renewed every third of it while an item is worked
	Poll        time.Duration // how often Start's loop looks for due items
	// MaxRounds bounds the full batches one poll drains (a backlog drains
	// without one poll running for ever); zero: no bound.
	MaxRounds int
	// Finish makes Stop wait for the items in flight (until its context
	// ends); otherwise Stop cuts them off at once and their leases bring
	// them back.
	Finish bool
	// AfterRun, when set, is called after each RunOnce (to read a
	// backlog's gauge, say).
	AfterRun func(ctx context.Context)
	Logger   *slog.Logger
}

// Worker claims due items and delivers them (see the package doc).
type Worker[T any] struct {
	cfg Config[T]
	startstop.Base
}

// New returns a Worker; Start runs it in the background, or call RunOnce.
func New[T any](cfg Config[T]) *Worker[T] {
	if cfg.Classify == nil {
		cfg.Classify = Classify
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	return &Worker[T]{cfg: cfg}
}

// Start runs the loop in the background until Stop.
func (w *Worker[T]) Start(ctx context.Context) error {
	if w.cfg.Finish {
		ctx = context.WithoutCancel(ctx) // Stop waits for what is in flight
	}
	ctx, err := w.StartInit(ctx)
	if err != nil {
		return fmt.Errorf("starting %s delivery: %w", w.cfg.Name, err)
	}
	if !w.cfg.Finish {
		ctx = w.UntilStopping(ctx)
	}
	return w.Go(func() { w.run(ctx) })
}

// Stop stops claiming and waits for the loop; see Config.Finish.
func (w *Worker[T]) Stop(ctx context.Context) error {
	if err := w.Base.Stop(ctx); err != nil {
		return fmt.Errorf("stopping %s delivery: %w; what was in flight is retried after its lease", w.cfg.Name, context.Cause(ctx))
	}
	return nil
}

// run drains due items every Poll until Stop.
func (w *Worker[T]) run(ctx context.Context) {
	tick := time.NewTicker(w.cfg.Poll)
	defer tick.Stop()
	stopping := w.Stopping()
	for {
		for round := 0; w.cfg.MaxRounds == 0 || round < w.cfg.MaxRounds; round++ {
			n, err := w.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				w.cfg.Logger.Error("claiming "+w.cfg.Name+" failed", slog.String("error", err.Error()))
			}
			if err != nil || n < w.cfg.Batch || w.IsStopping() {
				break
			}
		}
		select {
		case <-stopping:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// RunOnce claims up to a batch of due items and delivers them, each lane in
// order and the lanes at once, recording each outcome. It returns how many
// it claimed; errors of single items are recorded on them, and the error
// returned is the claim's.
func (w *Worker[T]) RunOnce(ctx context.Context) (int, error) {
	if w.cfg.AfterRun != nil {
		defer w.cfg.AfterRun(ctx)
	}
	items, err := w.cfg.Queue.Claim(ctx, w.cfg.Batch, w.cfg.Lease)
	if err != nil || len(items) == 0 {
		return 0, err
	}
	h := w.hold(ctx, items)
	defer h.release()
	lanes := w.lanes(ctx, items)
	var wg sync.WaitGroup
	for _, l := range lanes {
		wg.Go(func() {
			for _, i := range l.items {
				if ctx.Err() != nil {
					return // the lease brings the rest back
				}
				w.deliver(ctx, items, h, i, l.name)
			}
		})
	}
	wg.Wait()
	return len(items), nil
}

type lane struct {
	name  string
	items []int
}

// lanes groups the items' indexes by lane, in the order lanes first appear.
func (w *Worker[T]) lanes(ctx context.Context, items []T) []lane {
	if w.cfg.Lane == nil {
		out := make([]lane, len(items))
		for i := range items {
			out[i] = lane{items: []int{i}}
		}
		return out
	}
	var out []lane
	at := make(map[string]int)
	for i, item := range items {
		name := w.cfg.Lane(ctx, item)
		j, ok := at[name]
		if !ok {
			j = len(out)
			at[name] = j
			out = append(out, lane{name: name})
		}
		out[j].items = append(out[j].items, i)
	}
	return out
}

// deliver makes one attempt at item i as claimed, classifies it and records the
// outcome. An attempt cut off by shutdown records nothing: its outcome is
// unknown, and the lease brings the item back.
func (w *Worker[T]) deliver(ctx context.Context, items []T, h *held[T], i int, lane string) {
	if w.cfg.Pacer != nil && w.cfg.Lane != nil {
		if until := w.cfg.Pacer.PausedUntil(ctx, lane); !until.IsZero() {
			w.record(ctx, h.finish(i), Outcome{Result: Retried, Fail: &Failure{Class: Postponed, Reason: ReasonPaused}, Delay: time.Until(until)})
			return
		}
	}
	done, err := w.cfg.Deliver(ctx, items[i])
	item := h.finish(i)
	if err != nil && ctx.Err() != nil {
		return
	}
	if err == nil {
		w.record(ctx, item, Outcome{Result: Delivered, Done: done})
		return
	}
	f := w.cfg.Classify(err)
	switch f.Class {
	case Postponed:
		w.record(ctx, item, Outcome{Result: Retried, Fail: f, Delay: f.Delay})
	case RateLimited:
		if w.cfg.Pacer != nil {
			w.cfg.Pacer.Pause(ctx, lane, f.Delay)
		}
		w.record(ctx, item, Outcome{Result: Retried, Fail: f, Delay: f.Delay, Attempted: true})
	case Permanent:
		w.record(ctx, item, Outcome{Result: Failed, Fail: f, Attempted: true})
	default:
		attempts := w.cfg.Queue.Attempts(item)
		if w.cfg.MaxAttempts > 0 && attempts >= w.cfg.MaxAttempts {
			w.record(ctx, item, Outcome{Result: Failed, Fail: f, Attempted: true, GaveUp: true})
			return
		}
		w.record(ctx, item, Outcome{Result: Retried, Fail: f, Delay: w.cfg.Backoff.Delay(attempts), Attempted: true})
	}
}

// record writes an outcome; a failure only delays the item (its lease runs
// out and it is delivered again), so it is logged.
func (w *Worker[T]) record(ctx context.Context, item T, o Outcome) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := w.cfg.Queue.Record(ctx, item, o); err != nil {
		w.cfg.Logger.Error("recording "+w.cfg.Name+" outcome", slog.String("error", err.Error()))
	}
}
