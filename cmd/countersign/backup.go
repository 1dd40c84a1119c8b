package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store/embedded"
)

const backupUsage = `usage: countersign backup FILE

Writes a consistent copy of the embedded store (COUNTERSIGN_DATA_DIR's
countersign.db) to FILE while serve keeps running, and checks the copy.
FILE must not exist, nor be a symlink; the copy is readable by its owner
only. To restore: stop serve, run countersign restore FILE, start serve.

With COUNTERSIGN_DATABASE_URL set there is nothing to copy here: back
PostgreSQL up with its own tools, pg_dump for a logical copy or continuous
archiving (PITR) for point-in-time recovery.
`

// backup copies the embedded store to file.
func backup(ctx context.Context, file string, getenv func(string) string, stdout io.Writer) error {
	if getenv("COUNTERSIGN_DATABASE_URL") != "" {
		return errors.New("COUNTERSIGN_DATABASE_URL is set: the ledger is in PostgreSQL; back it up with pg_dump (pg_dump -Fc) or continuous archiving for point-in-time recovery (PITR), see the README's Backups")
	}
	dir, err := config.DataDir(getenv)
	if err != nil {
		return err
	}
	source := filepath.Join(dir, storeFile)
	if err := embedded.Backup(ctx, source, file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "copied %s to %s (integrity checked)\n", source, file)
	return nil
}
