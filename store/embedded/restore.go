package embedded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/countersign/countersign/store"
)

// Restored says what Restore did.
type Restored struct {
	store.Restore
	// Replaced is where the ledger the copy replaced was kept, "" when
	// there was none.
	Replaced string
}

// Restore puts the copy at src (a Backup) in place of the ledger at path
// and marks it restored (store.Executor.MarkRestored), so that nothing the
// copy forgot was sent is sent again without asking the provider. It
// refuses with ErrInUse while any process has the ledger open (serve
// holds it for its whole run). The copy is read without following a
// symlink, migrated and marked under a new name created 0600 beside path,
// then renamed over it; the ledger it replaces is kept beside it, with its
// -wal and -shm files, under a name that says when.
func Restore(ctx context.Context, src, path string, p store.RestoreParams) (Restored, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Restored{}, fmt.Errorf("restoring: %w", err)
	}
	lock, err := lockLedger(path, true)
	if errors.Is(err, ErrInUse) {
		return Restored{}, fmt.Errorf("restoring %s: %w: serve (or another countersign command) has it open; stop it first", path, err)
	}
	if err != nil {
		return Restored{}, fmt.Errorf("restoring: %w", err)
	}
	defer lock.Close()

	tmp, err := copyIn(src, path)
	if err != nil {
		return Restored{}, err
	}
	defer removeLedger(tmp) // after the rename, nothing is left under tmp
	if err := checkIntegrity(ctx, tmp); err != nil {
		return Restored{}, fmt.Errorf("restoring %s: %w", src, err)
	}
	var out Restored
	if out.Restore, err = mark(ctx, tmp, p); err != nil {
		return Restored{}, fmt.Errorf("restoring %s: %w", src, err)
	}
	if out.Replaced, err = setAside(path, out.RestoredAt); err != nil {
		return Restored{}, fmt.Errorf("restoring: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return Restored{}, fmt.Errorf("restoring: %w", err)
	}
	return out, syncDir(filepath.Dir(path))
}

// copyIn copies the regular file at src beside path, into a new file
// created 0600, and returns its name.
func copyIn(src, path string) (string, error) {
	in, err := os.OpenFile(src, os.O_RDONLY|noFollow, 0)
	if err != nil {
		if info, lerr := os.Lstat(src); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("restoring %s: it is a symlink; name the copy itself", src)
		}
		return "", fmt.Errorf("restoring %s: %w", src, err)
	}
	defer in.Close()
	if info, err := in.Stat(); err != nil {
		return "", fmt.Errorf("restoring %s: %w", src, err)
	} else if !info.Mode().IsRegular() {
		return "", fmt.Errorf("restoring %s: not a regular file", src)
	}
	out, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".restore-*")
	if err != nil {
		return "", fmt.Errorf("restoring: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(out.Name())
		return "", fmt.Errorf("restoring %s: %w", src, err)
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("restoring %s: %w", src, err)
	}
	return out.Name(), nil
}

// mark brings the copy at path to the current schema and records the
// restore in it. Closing it checkpoints its write-ahead log into the file,
// which is then whole by itself.
func mark(ctx context.Context, path string, p store.RestoreParams) (store.Restore, error) {
	d, err := open(ctx, path, busyTimeout)
	if err != nil {
		return store.Restore{}, err
	}
	defer d.Close()
	if _, err := d.Migrate(ctx, nil); err != nil {
		return store.Restore{}, err
	}
	var r store.Restore
	err = d.InTx(ctx, true, func(ex store.Executor) (err error) {
		r, err = ex.MarkRestored(ctx, p)
		return err
	})
	if err != nil {
		return store.Restore{}, err
	}
	d.Close()
	for _, suffix := range []string{"-wal", "-shm"} {
		if _, err := os.Lstat(path + suffix); !errors.Is(err, fs.ErrNotExist) {
			return store.Restore{}, fmt.Errorf("the restored copy's %s file was left after closing it (%v)", suffix, err)
		}
	}
	return r, nil
}

// setAside renames the ledger at path, with its -wal and -shm files, to a
// name stamped with at, and returns it; "" when there is no ledger. The
// -wal holds commits not yet in the file: left beside the copy, SQLite
// would replay them into it.
func setAside(path string, at time.Time) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		for _, suffix := range []string{"-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
		return "", nil
	} else if err != nil {
		return "", err
	}
	aside := path + ".before-restore-" + at.UTC().Format("20060102T150405.000000Z")
	for _, suffix := range []string{"-wal", "-shm", ""} {
		if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return aside, nil
}

// removeLedger removes the file at path and its -wal and -shm files.
func removeLedger(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}
