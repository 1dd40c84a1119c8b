package embedded_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/countersign/countersign/store/embedded"
)

// bigLedger writes a SQLite file of about size bytes, so that copying it
// takes long enough to be watched.
func bigLedger(t *testing.T, size int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const chunk = 1 << 20
	if _, err := db.Exec(`CREATE TABLE filler (b blob);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO filler SELECT randomblob(?) FROM n`, size/chunk, chunk); err != nil {
		t.Fatal(err)
	}
	return path
}

// The copy holds every effect: no one but its owner may read it at any
// moment, not only once the copy is done. A watcher looks at the name
// while the copy is written.
func TestBackupIsOwnerOnlyFromTheStart(t *testing.T) {
	t.Parallel()
	src := bigLedger(t, 16<<20)
	dest := filepath.Join(t.TempDir(), "copy.db")
	var seen atomic.Uint32 // the widest mode the watcher saw at dest
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if info, err := os.Lstat(dest); err == nil {
				seen.Store(seen.Load() | uint32(info.Mode().Perm()))
			}
			select {
			case <-done:
				return
			default:
			}
		}
	}()
	err := embedded.Backup(context.Background(), src, dest)
	close(done)
	<-watched
	if err != nil {
		t.Fatal(err)
	}
	if mode := fs.FileMode(seen.Load()); mode&0o077 != 0 {
		t.Errorf("the copy was readable by others while it was written: %v", mode)
	}
	info, err := os.Stat(dest)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the copy's mode is %v (%v), want 0600", info.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dest))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files after the backup, want the copy alone", len(entries))
	}
}

// A symlink at the destination is refused, dangling or not: the copy is
// never written through it, and what it points at is left alone.
func TestBackupRefusesSymlinks(t *testing.T) {
	t.Parallel()
	src := bigLedger(t, 1<<20)
	dir := t.TempDir()
	for _, c := range []struct{ name, target string }{
		{"dangling", filepath.Join(dir, "elsewhere.db")},
		{"to a file", filepath.Join(dir, "existing.db")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "to a file" {
				if err := os.WriteFile(c.target, []byte("keep"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			dest := filepath.Join(dir, "link-"+strings.ReplaceAll(c.name, " ", "-"))
			if err := os.Symlink(c.target, dest); err != nil {
				t.Fatal(err)
			}
			err := embedded.Backup(context.Background(), src, dest)
			if err == nil || !strings.Contains(err.Error(), "symlink") {
				t.Fatalf("backup through a %s symlink: %v, want a refusal", c.name, err)
			}
			raw, err := os.ReadFile(c.target)
			switch {
			case c.name == "dangling" && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("the dangling link's target was created (%v)", err)
			case c.name == "to a file" && string(raw) != "keep":
				t.Errorf("the link's target was changed: %q %v", raw, err)
			}
		})
	}
}
