package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Backup writes a consistent copy of the ledger file at path to dest, while
// serve may be writing to it. VACUUM INTO reads one snapshot (a read
// transaction: WAL lets writers go on meanwhile) and writes a compact,
// self-contained database, with no -wal file to carry along; the copy is
// checked before Backup returns. dest must not exist, nor be a symlink,
// dangling or not: a backup never overwrites another nor writes through a
// link.
//
// The copy holds every effect, so it is its owner's alone from its first
// byte: VACUUM INTO fills a file created 0600 (O_EXCL) beside dest, which
// is then linked to dest, failing if anything took that name meanwhile.
func Backup(ctx context.Context, path, dest string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("backing up %s: %w", path, err)
	}
	if _, err := os.Lstat(dest); err == nil {
		return fmt.Errorf("backing up to %s: the file exists (or is a symlink); choose a new name", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.tmp")
	if err != nil {
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath) // after the link, the copy lives on under dest
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return fmt.Errorf("backing up %s: %w", path, err)
	}
	defer db.Close()
	// VACUUM INTO accepts an empty file, and keeps its mode.
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmpPath); err != nil {
		return fmt.Errorf("backing up %s: %w", path, err)
	}
	if err := checkIntegrity(ctx, tmpPath); err != nil {
		return err
	}
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	// link(2) never follows nor replaces what is at dest.
	if err := os.Link(tmpPath, dest); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("backing up to %s: the file exists (or is a symlink); choose a new name", dest)
		}
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	return syncDir(filepath.Dir(dest))
}

// syncFile flushes the file at path to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncDir makes a name created or renamed in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// checkIntegrity runs SQLite's integrity check on the file at path.
func checkIntegrity(ctx context.Context, path string) error {
	// Read-only, and without the WAL pragma: checking the copy leaves it a
	// single file.
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		return err
	}
	defer db.Close()
	var verdict string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&verdict); err != nil {
		return fmt.Errorf("checking the copy %s: %w", path, err)
	}
	if verdict != "ok" {
		return fmt.Errorf("checking the copy %s: %s", path, verdict)
	}
	return nil
}
