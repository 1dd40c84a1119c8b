package executor

import (
	"context"
	"log/slog"
	"sync"

	"github.com/countersign/countersign/store"
)

// reconcileBatch bounds one statement of the reconcile sweep.
const reconcileBatch = 200

// ReconcileReport says what one reconcile pass did.
type ReconcileReport struct {
	Expired  int // claims past their timeout moved to unknown
	Verified int // unknowns leased and looked at
	Settled  int // unknowns moved on (succeeded, ready, failed, needs_review)
}

// ReconcileOnce settles what the executor cannot know by itself. Claims past
// their timeout become unknown (the worker may have died before or after
// sending). Each unknown is then verified: through the tool's verify URL when
// it has one (200 done, 404 not done), by a resend under the same key when
// the provider honours keys, and otherwise by a human (needs_review). Safe to
// run on every replica at once.
func (e *Executor) ReconcileOnce(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	for {
		n, err := e.db.ExpireClaims(ctx, e.now(), reconcileBatch)
		rep.Expired += n
		if err != nil {
			return rep, err
		}
		if n < reconcileBatch {
			break
		}
	}
	for {
		unknowns, err := e.db.LeaseUnknowns(ctx, store.LeaseUnknownsParams{Now: e.now(), Lease: e.lease, Limit: reconcileBatch})
		if err != nil {
			return rep, err
		}
		rep.Verified += len(unknowns)
		transitions := e.verifyAll(ctx, unknowns)
		applied, err := e.db.TransitionExecutions(ctx, store.TransitionParams{
			From: store.ExecUnknown, Actor: store.ReconcilerActor, Now: e.now(),
		}, transitions)
		if err != nil {
			return rep, err
		}
		rep.Settled += len(applied)
		e.observe(transitions, applied)
		if len(unknowns) < reconcileBatch {
			break
		}
	}
	unknown, needsReview, err := e.db.CountUnsettled(ctx)
	if err != nil {
		return rep, err
	}
	e.metrics.Unknown.Set(float64(unknown))
	e.metrics.NeedsReview.Set(float64(needsReview))
	if rep.Expired > 0 || rep.Settled > 0 {
		e.logger.Info("reconciled", slog.Int("expired_claims", rep.Expired), slog.Int("verified", rep.Verified), slog.Int("settled", rep.Settled))
	}
	return rep, nil
}

func (e *Executor) verifyAll(ctx context.Context, unknowns []store.Unknown) []store.Transition {
	out := make([]store.Transition, len(unknowns))
	keep := make([]bool, len(unknowns))
	var wg sync.WaitGroup
	sem := make(chan struct{}, e.conc)
	for i := range unknowns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], keep[i] = e.verify(ctx, unknowns[i])
		}()
	}
	wg.Wait()
	transitions := out[:0:0]
	for i, t := range out {
		if keep[i] {
			transitions = append(transitions, t)
		}
	}
	return transitions
}
