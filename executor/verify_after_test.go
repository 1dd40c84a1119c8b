package executor_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
)

// A provider slowed by load stores a write after countersign gave up on its
// answer. A key-unaware tool's unknown outcome settles for verify_after
// before it is verified, so the verify finds the write and nothing is sent
// again. Without the settle time (the second case, the hazard it prevents)
// the verify reads 404 while the first write is still on its way, and the
// resend makes two.
func TestVerifyWaitsForAWriteStoredAfterTheTimeout(t *testing.T) {
	for _, c := range []struct {
		name    string
		settle  time.Duration
		objects int
	}{
		{"settled before the verify", 2500 * time.Millisecond, 1},
		{"verified at once", time.Millisecond, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, &options{tool: func(tool *executor.Tool) {
				tool.KeyAware, tool.Timeout, tool.VerifyAfter = false, 300*time.Millisecond, c.settle
			}})
			b.provider.IgnoreKeys(true)
			req := b.approve(t)
			const storeAfter = 1500 * time.Millisecond
			b.provider.SetFor(req.Key, providertest.Behavior{StoreAfter: storeAfter, Times: 1})
			b.dispatch(t)
			wantState(t, b.execution(t, req.ID), store.ExecUnknown)

			// The reconciler and the dispatcher run as often as they like.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
				b.reconcile(t)
				b.dispatch(t)
				if b.execution(t, req.ID).State == store.ExecSucceeded {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
			for deadline := time.Now().Add(10 * time.Second); b.provider.Storing() > 0; {
				if time.Now().After(deadline) {
					t.Fatal("the slow first write never landed")
				}
				time.Sleep(10 * time.Millisecond) // polling interval, not a wait for an event
			}
			wantObjects(t, b.provider, req.Key, c.objects)
		})
	}
}
