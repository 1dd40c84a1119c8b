package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// inReview returns a request whose execution is waiting for a human.
func (b *bundle) inReview(t *testing.T) (store.Request, store.Execution) {
	t.Helper()
	req := b.approve(t)
	b.provider.SetFor(req.Key, providertest.Behavior{Status: 501, Times: 1})
	b.dispatch(t)
	e := b.execution(t, req.ID)
	wantState(t, e, store.ExecNeedsReview)
	return req, e
}

func TestResolveMarkSucceededAndMarkFailed(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		ctx := context.Background()
		for action, want := range map[string]store.ExecState{
			executor.ActionMarkSucceeded: store.ExecSucceeded,
			executor.ActionMarkFailed:    store.ExecFailed,
		} {
			req, e := b.inReview(t)
			if err := b.exec.Resolve(ctx, req.ID, e.ID, action, "U0SUPPORT"); err != nil {
				t.Fatalf("%s: %v", action, err)
			}
			wantState(t, b.execution(t, req.ID), want)
			events, _ := b.db.Store.EventsFor(ctx, req.ID)
			last := events[len(events)-1]
			if last.Kind != "resolved" || last.Actor != "U0SUPPORT" || last.Data["action"] != action {
				t.Fatalf("%s: last event %+v", action, last)
			}
			// A card update waits to draw the resolution (one queued before
			// it, unclaimed, draws it too).
			if n := b.db.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'update_card' AND state = 'pending' AND attempts = 0 AND request_id = '`+req.ID+`'`); n != 1 {
				t.Fatalf("%s: %d card updates wait, want 1: outbox %v", action, n, outboxRows(t, b.db, req.ID))
			}
			// A second click changes nothing.
			if err := b.exec.Resolve(ctx, req.ID, e.ID, action, "U0OTHER"); !errors.Is(err, executor.ErrNotNeedsReview) {
				t.Fatalf("%s: second resolve: %v", action, err)
			}
			wantObjects(t, b.provider, req.Key, 0)
		}
	})
}

func TestResolveResendRunsTheSameRowUnderTheSameKey(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.MaxAttempts = 1 }})
		req, e := b.inReview(t)
		if err := b.exec.Resolve(context.Background(), req.ID, e.ID, executor.ActionResend, "U0SUPPORT"); err != nil {
			t.Fatal(err)
		}
		again := b.execution(t, req.ID)
		wantState(t, again, store.ExecReady)
		if again.ID != e.ID || again.MaxAttempts != 2 {
			t.Fatalf("resend gave row %d with cap %d; want row %d with cap 2", again.ID, again.MaxAttempts, e.ID)
		}
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
		if b.provider.Writes(req.Key) != 2 {
			t.Fatalf("writes %d", b.provider.Writes(req.Key))
		}
	})
}

func TestResolveRefusesWhatIsNotWaitingForAHuman(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		ctx := context.Background()
		req := b.approve(t)
		e := b.execution(t, req.ID)
		if err := b.exec.Resolve(ctx, req.ID, e.ID, executor.ActionMarkSucceeded, "U0SUPPORT"); !errors.Is(err, executor.ErrNotNeedsReview) {
			t.Fatalf("ready row: %v", err)
		}
		if err := b.exec.Resolve(ctx, req.ID, e.ID, "delete", "U0SUPPORT"); !errors.Is(err, executor.ErrUnknownAction) {
			t.Fatalf("unknown action: %v", err)
		}
		if err := b.exec.Resolve(ctx, req.ID, e.ID+1000, executor.ActionResend, "U0SUPPORT"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing row: %v", err)
		}
		if err := b.exec.Resolve(ctx, "not-a-uuid", e.ID, executor.ActionResend, "U0SUPPORT"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("bad request id: %v", err)
		}
		wantState(t, b.execution(t, req.ID), store.ExecReady)
	})
}
