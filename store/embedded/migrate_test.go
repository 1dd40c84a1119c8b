package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/countersign/countersign/store/embedded"
)

// Two processes starting on a fresh file at once (two Stores stand for them:
// separate writer connections) both come up, and each migration is applied
// once.
func TestMigrateAcrossStoresOnAFreshFile(t *testing.T) {
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "ledger.db")
		stores := make([]*embedded.Store, 3)
		for i := range stores {
			if stores[i], err = embedded.Open(ctx, path); err != nil {
				t.Fatal(err)
			}
			defer stores[i].Close()
		}
		applied := make([]int, len(stores))
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range stores {
			wg.Go(func() {
				<-start
				applied[i], errs[i] = s.Migrate(ctx, nil)
			})
		}
		close(start)
		wg.Wait()
		total := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: Migrate on store %d: %v", round, i, err)
			}
			total += applied[i]
		}
		if total != len(entries) {
			t.Fatalf("round %d: %d migrations applied in all, want each of the %d once", round, total, len(entries))
		}
	}
}
