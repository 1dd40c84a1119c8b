package embedded_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
)

// Two Stores on one file stand for two processes: their writer connections
// are distinct, so only SQLite's write lock (BEGIN IMMEDIATE) keeps their
// claims apart. The shared contract tests cover claims within one Store.
func TestClaimsAreExclusiveAcrossStoresOnOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	stores := make([]*store.Ledger, 2)
	for i := range stores {
		d, err := embedded.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Close)
		s := store.NewLedger(d, store.Options{})
		if _, err := s.Migrate(ctx, nil); err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	const executions = 30
	for i := range executions {
		req, inserted, err := stores[0].InsertRequest(ctx, store.NewRequest{
			Key: fmt.Sprintf("wa_multi_%02d", i), BasisHash: "b", RunID: "r", Step: []byte(`1`), Tool: "t",
			Snapshot: []byte(`{}`), PayloadHash: "p", RequestedBy: "agent", TTL: time.Hour,
		})
		if err != nil || !inserted {
			t.Fatalf("InsertRequest = %v, %v", inserted, err)
		}
		if _, _, ok, err := stores[1].Decide(ctx, store.DecideParams{RequestID: req.ID, Round: 1, PayloadHash: "p",
			Verdict: store.VerdictApprove, DecidedBy: "U1", Via: "slack", MaxAttempts: 1}); err != nil || !ok {
			t.Fatalf("Decide = %v, %v", ok, err)
		}
	}
	var (
		mu      sync.Mutex
		claimed = make(map[int64]int)
		wg      sync.WaitGroup
		errs    = make([]error, 4)
	)
	start := make(chan struct{})
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s := stores[w%len(stores)]
			for {
				claims, err := s.ClaimExecutions(ctx, store.ClaimParams{Worker: fmt.Sprint(w), Limit: 2,
					ClaimTimeouts: map[string]time.Duration{"t": time.Minute}})
				if err != nil || len(claims) == 0 {
					errs[w] = err
					return
				}
				mu.Lock()
				for _, c := range claims {
					claimed[c.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", w, err)
		}
	}
	if len(claimed) != executions {
		t.Errorf("%d executions claimed, want %d", len(claimed), executions)
	}
	for id, n := range claimed {
		if n != 1 {
			t.Errorf("execution %d claimed %d times", id, n)
		}
	}
}
