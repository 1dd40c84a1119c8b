package embedded_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
)

// Two processes starting on a fresh file at once (two Stores stand for them:
// separate writer connections) both come up, and each migration is applied
// once.
func TestMigrateAcrossStoresOnAFreshFile(t *testing.T) {
	entries, err := fs.ReadDir(migrations.SQLite, ".")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), "ledger.db")
		stores := make([]*store.Ledger, 3)
		for i := range stores {
			d, err := embedded.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			stores[i] = store.NewLedger(d, store.Options{})
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
