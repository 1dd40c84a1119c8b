package executor_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// TestTwoWorkersOnTheSameRow races two executors for each of a series of
// single ready rows: exactly one claims it, and the provider sees one write.
func TestTwoWorkersOnTheSameRow(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	other := executor.New(executor.Config{
		DB: b.db.Store, Tools: map[string]executor.Tool{toolName: b.tool}, Secrets: [][]byte{[]byte(secret)},
		Worker: "worker-b", Logger: slog.New(slog.DiscardHandler),
	})
	ctx := context.Background()
	for i := range 20 {
		req := b.approve(t)
		var (
			wg     sync.WaitGroup
			start  = make(chan struct{})
			counts [2]int
		)
		for w, ex := range []*executor.Executor{b.exec, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				n, err := ex.DispatchOnce(ctx)
				if err != nil {
					t.Error(err)
				}
				counts[w] = n
			}()
		}
		close(start)
		wg.Wait()
		if counts[0]+counts[1] != 1 {
			t.Fatalf("round %d: claims %v, want exactly one", i, counts)
		}
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
	}
}

// TestStartWakesOnNotification checks that an approval is dispatched
// through LISTEN/NOTIFY without waiting for a poll.
func TestStartWakesOnNotification(t *testing.T) {
	t.Parallel()
	db := drivertest.Postgres.Open(t, true)
	wake, unsubscribe := db.Notifier(t).SubscribeReady()
	defer unsubscribe()
	// No polling: only a notification can wake it.
	b := setup(t, &options{backend: db, config: func(cfg *executor.Config) { cfg.Wake = wake }})
	if err := b.exec.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.exec.Stop(context.Background()) })

	// The LISTEN connection starts asynchronously: keep approving until one
	// is dispatched, then check that every approval was.
	var reqs []store.Request
	eventually(t, 10*time.Second, "a dispatch woken by NOTIFY", func() bool {
		if len(reqs) == 0 || time.Since(reqs[len(reqs)-1].UpdatedAt) > 200*time.Millisecond {
			reqs = append(reqs, b.approve(t))
		}
		return b.provider.Objects() > 0
	})
	// The approvals made before the LISTEN connection was up woke nobody by
	// themselves; the last one's notification must dispatch them too. An
	// outcome is recorded after the provider answered, so wait for that.
	reqs = append(reqs, b.approve(t))
	eventually(t, 5*time.Second, fmt.Sprintf("the outcomes of all %d approvals", len(reqs)), func() bool {
		for _, req := range reqs {
			if b.execution(t, req.ID).State != store.ExecSucceeded {
				return false
			}
		}
		return true
	})
	for _, req := range reqs {
		wantObjects(t, b.provider, req.Key, 1)
	}
	if n := b.provider.Objects(); n != len(reqs) {
		t.Fatalf("provider holds %d objects, want one for each of the %d approvals", n, len(reqs))
	}
}
