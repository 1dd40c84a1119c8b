package executor_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// later returns an executor on b's database whose clock runs ahead, so claims
// made now look expired to it.
func (b *bundle) later(t *testing.T, ahead time.Duration) *executor.Executor {
	t.Helper()
	return executor.New(executor.Config{
		DB: b.db.Store, Tools: map[string]executor.Tool{toolName: b.tool}, Secrets: [][]byte{[]byte(secret)},
		Worker: "reconciler", Backoff: func(int) time.Duration { return 0 }, VerifyWindow: -1,
		Now: func() time.Time { return time.Now().Add(ahead) },
	})
}

// claimAndDie claims every ready row as a worker that never comes back.
func (b *bundle) claimAndDie(t *testing.T) []store.Claim {
	t.Helper()
	claims, err := b.db.Store.ClaimExecutions(context.Background(), store.ClaimParams{
		Worker: "dead-worker", Limit: 100, ClaimTimeouts: map[string]time.Duration{toolName: b.tool.ClaimTimeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	return claims
}

// sendAsTheDeadWorker performs the write at the provider as the dead worker
// would have, before dying without recording it.
func (b *bundle) sendAsTheDeadWorker(t *testing.T, c store.Claim) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.tool.URL, bytes.NewReader(c.Snapshot))
	req.Header.Set("Idempotency-Key", c.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func TestCrashBeforeDispatchIsVerifiedThenSentOnce(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		req := b.approve(t)
		b.claimAndDie(t)

		lt := b.later(t, 2*time.Minute)
		rep, err := lt.ReconcileOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Expired != 1 || rep.Settled != 1 {
			t.Fatalf("report %+v", rep)
		}
		wantState(t, b.execution(t, req.ID), store.ExecReady) // the provider does not have it
		if _, err := lt.DispatchOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
		if e.Attempts != 2 {
			t.Fatalf("attempts %d, want 2 (the dead claim counts)", e.Attempts)
		}
		if got := eventKinds(t, b.db, req.ID); !slices.Equal(got, []string{"requested", "voted", "decided", "claimed", "unknown", "verified", "claimed", "succeeded"}) {
			t.Fatalf("events %v", got)
		}
	})
}

func TestCrashAfterTheProviderProcessedIsVerifiedNotResent(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.KeyAware = false }})
		b.provider.IgnoreKeys(true)
		req := b.approve(t)
		for _, c := range b.claimAndDie(t) {
			b.sendAsTheDeadWorker(t, c)
		}
		b.later(t, 2*time.Minute).ReconcileOnce(context.Background())
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		if e.ProviderRef == nil || *e.ProviderRef != "obj_1" {
			t.Fatalf("provider_ref %v", e.ProviderRef)
		}
		b.dispatch(t)
		wantObjects(t, b.provider, req.Key, 1)
	})
}

func TestVerifyBeforeRetryAgainstAProviderThatIgnoresKeys(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.KeyAware = false }})
		b.provider.IgnoreKeys(true)
		done := b.approve(t)
		notDone := b.approve(t)
		b.provider.SetFor(done.Key, providertest.Behavior{DropAfterProcess: true, Times: 1})
		b.provider.SetFor(notDone.Key, providertest.Behavior{Status: 504, Times: 1})
		b.dispatch(t)
		wantState(t, b.execution(t, done.ID), store.ExecUnknown)
		wantState(t, b.execution(t, notDone.ID), store.ExecUnknown)

		// A blind resend would create a second object for done; the executor
		// asks first, and only resends what the provider does not have.
		b.dispatch(t)
		wantObjects(t, b.provider, done.Key, 1)
		b.reconcileDue(t, 2)
		wantState(t, b.execution(t, done.ID), store.ExecSucceeded)
		wantState(t, b.execution(t, notDone.ID), store.ExecReady)
		b.dispatch(t)
		wantState(t, b.execution(t, notDone.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, done.Key, 1)
		wantObjects(t, b.provider, notDone.Key, 1)
	})
}

func TestKeyAwareProviderWithoutVerifyIsResentUnderTheSameKey(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.Verify = nil }})
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{DropAfterProcess: true, Times: 1})
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecUnknown)
		b.reconcile(t)
		wantState(t, b.execution(t, req.ID), store.ExecReady)
		b.dispatch(t)
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		if b.provider.Writes(req.Key) != 2 {
			t.Fatalf("writes %d, want 2", b.provider.Writes(req.Key))
		}
		wantObjects(t, b.provider, req.Key, 1) // the provider deduplicated the resend
		if deref(e.ProviderRef) != "obj_1" {
			t.Fatalf("provider_ref %q, want the first object's", deref(e.ProviderRef))
		}
	})
}

func TestUnknownWithNoWayToVerifyGoesToAHuman(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.Verify, tool.KeyAware = nil, false }})
		b.provider.IgnoreKeys(true)
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{DropAfterProcess: true, Times: 1})
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecUnknown)
		b.reconcileDue(t, 1)
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecNeedsReview)
		if deref(e.LastCode) != executor.CodeUnverifiable {
			t.Fatalf("code %q", deref(e.LastCode))
		}
		if got := outboxRows(t, b.db, req.ID); !slices.Contains(got, "thread_reply/1/needs_review") {
			t.Fatalf("outbox %v", got)
		}
		b.dispatch(t)
		wantObjects(t, b.provider, req.Key, 1)
	})
}

func TestAStaleWorkerNeverOverwritesANewerOutcome(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		req := b.approve(t)
		stale := b.claimAndDie(t)[0]
		lt := b.later(t, 2*time.Minute)
		if _, err := lt.ReconcileOnce(context.Background()); err != nil { // expired, verified not done → ready
			t.Fatal(err)
		}
		if _, err := lt.DispatchOnce(context.Background()); err != nil { // attempt 2 succeeds
			t.Fatal(err)
		}
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)

		// The dead worker wakes up and reports a failure for its old claim.
		applied, err := b.db.Store.TransitionExecutions(context.Background(), store.TransitionParams{
			From: store.ExecClaimed, Worker: "dead-worker", Actor: store.ExecutorActor("dead-worker"),
		}, []store.Transition{{ExecutionID: stale.ID, Attempt: stale.Attempts, To: store.ExecFailed, Code: "card_declined"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(applied) != 0 {
			t.Fatal("a stale worker's outcome was recorded")
		}
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
	})
}

func TestInconclusiveVerificationWaitsThenEscalates(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, config: func(c *executor.Config) { c.VerifyWindow = time.Hour }})
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{Status: 504})
		b.dispatch(t)
		// The verify endpoint is down.
		bad := executor.New(executor.Config{DB: b.db.Store, Tools: map[string]executor.Tool{toolName: withVerify(b.tool, "http://127.0.0.1:1/objects?key={key}")}, VerifyWindow: time.Hour})
		if rep, err := bad.ReconcileOnce(context.Background()); err != nil || rep.Settled != 0 {
			t.Fatalf("report %+v err %v", rep, err)
		}
		wantState(t, b.execution(t, req.ID), store.ExecUnknown)
		// Past the window, a human decides.
		late := executor.New(executor.Config{DB: b.db.Store, Tools: map[string]executor.Tool{toolName: withVerify(b.tool, "http://127.0.0.1:1/objects?key={key}")},
			VerifyWindow: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
		if _, err := late.ReconcileOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantState(t, b.execution(t, req.ID), store.ExecNeedsReview)
	})
}

func withVerify(t executor.Tool, url string) executor.Tool {
	t.Verify = &executor.Endpoint{URL: url}
	return t
}
