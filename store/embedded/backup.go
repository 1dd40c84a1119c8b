package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Backup writes a consistent copy of the ledger file at path to dest, while
// serve may be writing to it. VACUUM INTO reads one snapshot (a read
// transaction: WAL lets writers go on meanwhile) and writes a compact,
// self-contained database, with no -wal file to carry along; the copy is
// checked before Backup returns. dest must not exist: a backup never
// overwrites another.
func Backup(ctx context.Context, path, dest string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("backing up %s: %w", path, err)
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("backing up to %s: the file exists; choose a new name", dest)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	db, err := sql.Open("sqlite", dsn(path, false, busyTimeout))
	if err != nil {
		return fmt.Errorf("backing up %s: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		return fmt.Errorf("backing up %s: %w", path, err)
	}
	// The ledger holds every effect: the copy is its owner's alone.
	if err := os.Chmod(dest, 0o600); err != nil {
		return fmt.Errorf("backing up to %s: %w", dest, err)
	}
	return checkIntegrity(ctx, dest)
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
