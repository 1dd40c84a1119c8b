package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/store/embedded"
)

// The ledger file holds every effect: only its owner may read it, and its
// write-ahead log likewise.
func TestNewLedgerFileIsOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "countersign.db")
	d, err := embedded.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal"} {
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(p), mode)
		}
	}
}
