package store_test

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/migrations"
)

// migrationFiles counts each backend's migration files.
var migrationFiles = map[string]func() ([]fs.DirEntry, error){
	"postgres": func() ([]fs.DirEntry, error) { return fs.ReadDir(migrations.Postgres, ".") },
	"sqlite":   func() ([]fs.DirEntry, error) { return fs.ReadDir(migrations.SQLite, ".") },
}

func TestMigrateFreshDatabaseConcurrentlyThenIdempotent(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := bk.Open(t, false)
			entries, err := migrationFiles[bk.Name]()
			if err != nil {
				t.Fatal(err)
			}
			files := 0
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".sql") {
					files++
				}
			}
			// Replicas (or callers) starting at once: one applies everything.
			var wg sync.WaitGroup
			applied := make([]int, 3)
			errs := make([]error, 3)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					applied[i], errs[i] = b.Migrate(ctx, nil)
				}()
			}
			wg.Wait()
			total := 0
			for i, err := range errs {
				if err != nil {
					t.Fatalf("concurrent Migrate %d: %v", i, err)
				}
				total += applied[i]
			}
			if total != files || files == 0 {
				t.Errorf("migrations applied in all = %d, want each of the %d files once", total, files)
			}
			if n, err := b.Migrate(ctx, nil); err != nil || n != 0 {
				t.Fatalf("Migrate again = %d, %v; want 0", n, err)
			}
			if err := b.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			insertRequest(t, b, "wa_after_migrate")
		})
	}
}
