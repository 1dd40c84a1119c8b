package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// slowUnverifiable is a tool whose outcome only the send itself can tell: it
// neither honours keys nor has a verify URL, so an outcome lost on shutdown
// would leave the write to a human.
func slowUnverifiable(tool *executor.Tool) {
	tool.KeyAware = false
	tool.Verify = nil
	tool.Timeout = 5 * time.Second
}

// TestStopWaitsForTheSendInFlight stops a started executor while a slow
// provider is answering: Stop returns only once the outcome is recorded, and
// nothing is claimed afterwards.
func TestStopWaitsForTheSendInFlight(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		wake := make(chan struct{}, 1)
		b := setup(t, &options{driver: d, tool: slowUnverifiable, config: func(cfg *executor.Config) { cfg.Wake = wake }})
		b.provider.Set(providertest.Behavior{Delay: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := b.exec.Start(ctx); err != nil {
			t.Fatal(err)
		}

		req := b.approve(t)
		wake <- struct{}{}
		eventually(t, 5*time.Second, "the provider to receive the write", func() bool { return b.provider.Received() == 1 })
		cancel() // as a shutdown signal does: it stops the claiming, not the send
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer stopCancel()
		if err := b.exec.Stop(stopCtx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)

		later := b.approve(t)
		if n, err := b.exec.DispatchOnce(context.Background()); n != 0 || !errors.Is(err, executor.ErrStopped) {
			t.Fatalf("DispatchOnce after Stop: %d, %v; want 0, ErrStopped", n, err)
		}
		if err := b.exec.Start(context.Background()); !errors.Is(err, executor.ErrStopped) {
			t.Fatalf("Start after Stop: %v, want ErrStopped", err)
		}
		if err := b.exec.Stop(stopCtx); err != nil {
			t.Fatalf("a second Stop: %v", err)
		}
		wantState(t, b.execution(t, later.ID), store.ExecReady)
	})
}

// TestStopWaitsForADispatchOnceInFlight: a sweep's DispatchOnce (serve's
// cron runs one) is waited for like the loops' own.
func TestStopWaitsForADispatchOnceInFlight(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: slowUnverifiable})
		b.provider.Set(providertest.Behavior{Delay: time.Second})
		req := b.approve(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		returned := make(chan error, 1)
		go func() {
			_, err := b.exec.DispatchOnce(ctx)
			returned <- err
		}()
		eventually(t, 5*time.Second, "the provider to receive the write", func() bool { return b.provider.Received() == 1 })
		cancel()
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer stopCancel()
		if err := b.exec.Stop(stopCtx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		// The outcome is recorded before Stop returns. (DispatchOnce itself
		// returns a moment later: it leaves Stop's count on its way out.)
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		select {
		case err := <-returned:
			if err != nil {
				t.Fatalf("DispatchOnce: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("DispatchOnce never returned after Stop")
		}
		wantObjects(t, b.provider, req.Key, 1)
	})
}

// TestStopCutsOffSendsWhenItsGraceEnds: a provider that never answers does
// not hold Stop past its context; the send is cancelled, nothing is
// recorded, and the claim is left to expire to the reconciler.
func TestStopCutsOffSendsWhenItsGraceEnds(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) {
			slowUnverifiable(tool)
			tool.Timeout = 30 * time.Second
		}})
		b.provider.Set(providertest.Behavior{HangAfterProcess: true})
		req := b.approve(t)
		returned := make(chan struct{})
		go func() {
			defer close(returned)
			_, _ = b.exec.DispatchOnce(context.Background())
		}()
		eventually(t, 5*time.Second, "the provider to receive the write", func() bool { return b.provider.Received() == 1 })
		stopCtx, stopCancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer stopCancel()
		start := time.Now()
		err := b.exec.Stop(stopCtx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stop: %v, want the deadline", err)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("Stop took %s after its grace", took)
		}
		// Stop has waited for the cut-off dispatch to leave its count, with
		// nothing recorded; the goroutine returns from DispatchOnce just after.
		wantState(t, b.execution(t, req.ID), store.ExecClaimed)
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("the cut-off dispatch never returned")
		}
	})
}

func TestShutdownGrace(t *testing.T) {
	t.Parallel()
	tool := func(timeout time.Duration, precondition bool) executor.Tool {
		tl := executor.Tool{URL: "http://127.0.0.1:1/credits", Timeout: timeout}
		if precondition {
			tl.Precondition = &executor.Endpoint{URL: "http://127.0.0.1:1/precondition"}
		}
		return tl
	}
	for _, row := range []struct {
		tools map[string]executor.Tool
		want  time.Duration
	}{
		{map[string]executor.Tool{"a": tool(5*time.Second, false)}, 10 * time.Second},
		{map[string]executor.Tool{"a": tool(5*time.Second, false), "b": tool(8*time.Second, true)}, 21 * time.Second},
		{map[string]executor.Tool{"a": tool(0, false)}, executor.DefaultTimeout + 5*time.Second},
		{map[string]executor.Tool{"a": tool(2*time.Minute, false)}, executor.MaxShutdownGrace},
	} {
		if got := executor.New(executor.Config{Tools: row.tools}).ShutdownGrace(); got != row.want {
			t.Errorf("%d tools: grace %s, want %s", len(row.tools), got, row.want)
		}
	}
}

// shutdownRuns is how many times TestShutdownWhileTheWokenSendIsHeld plays
// its choreography on each driver. The runs overlap, each with its own
// database, executor and provider, so the test takes about one provider
// delay whatever their number.
const shutdownRuns = 20

// TestShutdownWhileTheWokenSendIsHeld plays serve's shutdown against the
// send an approval's wake-up started: the store's own notification wakes a
// started executor, the provider holds the POST for 3s, and the signal
// (ctx) and Stop come while it does. Every run must wait for the answer:
// the execution succeeds and the provider saw exactly one POST.
func TestShutdownWhileTheWokenSendIsHeld(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		// One database, as replicas share one; each run has a tool of its
		// own, which only its executor claims.
		db := d.Open(t, true)
		notifier := db.Notifier(t)
		runs := make([]*bundle, shutdownRuns)
		for i := range runs {
			wake, unsubscribe := notifier.SubscribeReady()
			t.Cleanup(unsubscribe)
			runs[i] = setup(t, &options{backend: db, toolName: fmt.Sprintf("billing.credit.%d", i), tool: func(tool *executor.Tool) {
				slowUnverifiable(tool)
				tool.Timeout = 10 * time.Second
			}, config: func(cfg *executor.Config) { cfg.Wake = wake; cfg.Worker = fmt.Sprintf("worker-%d", i) }})
			runs[i].provider.Set(providertest.Behavior{Delay: 3 * time.Second})
		}
		var wg sync.WaitGroup
		for i, r := range runs {
			wg.Go(func() {
				if err := shutdownWhileHeld(r, fmt.Sprintf("billing.credit.%d", i)); err != nil {
					t.Errorf("run %d: %v", i, err)
				}
			})
		}
		wg.Wait()
	})
}

// shutdownWhileHeld is one run of TestShutdownWhileTheWokenSendIsHeld.
func shutdownWhileHeld(b *bundle, tool string) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := b.exec.Start(ctx); err != nil {
		return err
	}
	approved := time.Now()
	// Not approveIntent: this runs off the test's goroutine, where
	// t.Fatal must not be called.
	req, _, err := b.review.Submit(ctx, "agent", approvals.Intent{
		RunID: fmt.Sprintf("shutdown-%d", seq.Add(1)), Step: json.RawMessage(`1`), Tool: tool,
		Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"}`), Summary: "Credit 42.00 USD",
	})
	if err != nil {
		return err
	}
	if _, err := b.review.Decide(ctx, approvals.Decision{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: approver, Via: "slack",
	}); err != nil {
		return err
	}
	for b.provider.Received() == 0 {
		if time.Since(approved) > 30*time.Second { // a loaded machine is slow, not wrong
			return errors.New("the provider never received the write")
		}
		time.Sleep(time.Millisecond) // polling interval, not a wait for an event
	}
	cancel() // the signal
	stopCtx, stopCancel := context.WithTimeout(context.Background(), b.exec.ShutdownGrace())
	defer stopCancel()
	if err := b.exec.Stop(stopCtx); err != nil {
		return fmt.Errorf("Stop: %w", err)
	}
	if took := time.Since(approved); took < 3*time.Second {
		return fmt.Errorf("Stop returned %v after the approval, before the provider answered", took)
	}
	e, err := b.db.Store.LatestExecution(context.Background(), req.ID)
	if err != nil {
		return err
	}
	if e.State != store.ExecSucceeded {
		return fmt.Errorf("the execution is %s, want succeeded", e.State)
	}
	if got := b.provider.Received(); got != 1 {
		return fmt.Errorf("the provider received %d POSTs, want 1", got)
	}
	return nil
}
