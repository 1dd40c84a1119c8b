package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
)

const restoreUsage = `usage: countersign restore [--replay-window DURATION] FILE
       countersign restore --postgres [--replay-window DURATION]

Puts a copy written by countersign backup in place of the embedded store
(COUNTERSIGN_DATA_DIR's countersign.db) and marks it restored. It refuses
while serve, or any other countersign command, has the store open. The
store it replaces is kept beside it as countersign.db.before-restore-TIME.

With --postgres it marks the database COUNTERSIGN_DATABASE_URL names, just
restored with pg_restore or point-in-time recovery, the same way. Run it as
the schema's owner, before serve starts on that database.

A restored ledger can have forgotten writes the providers performed after
the backup. Once marked, every execution unsettled in the copy, and every
one of a request created before the restore or within the replay window
after it (an agent replaying an intent the copy lost), asks its tool's
verify URL before it is sent: found, it succeeds with nothing sent. A tool
that honours keys is sent under the same key; a tool that can do neither
goes to needs_review. See the README's Backups.

  --replay-window DURATION   how long after the restore new requests are
                             guarded too (default 24h; 0 guards only the
                             requests in the copy)
`

// restoreOptions are restore's command-line flags.
type restoreOptions struct {
	postgres bool
	window   time.Duration
	file     string
}

// defaultReplayWindow covers agents that replay an intent within a day.
const defaultReplayWindow = 24 * time.Hour

// parseRestoreArgs reads restore's flags and FILE.
func parseRestoreArgs(args []string, stdout, stderr io.Writer) (opts restoreOptions, code int, ok bool) {
	rest, code, ok := parseArgs("restore", restoreUsage, args, 1, func(fs *flag.FlagSet) {
		fs.BoolVar(&opts.postgres, "postgres", false, "")
		fs.DurationVar(&opts.window, "replay-window", defaultReplayWindow, "")
	}, stdout, stderr)
	if !ok {
		return opts, code, false
	}
	switch {
	case opts.window < 0:
		fmt.Fprintf(stderr, "countersign restore: --replay-window may not be negative\n\n%s", restoreUsage)
		return opts, 2, false
	case opts.postgres && len(rest) > 0:
		fmt.Fprintf(stderr, "countersign restore: --postgres takes no FILE: restore the database with pg_restore or PITR first\n\n%s", restoreUsage)
		return opts, 2, false
	case !opts.postgres && len(rest) == 0:
		fmt.Fprintf(stderr, "countersign restore: name the copy to restore\n\n%s", restoreUsage)
		return opts, 2, false
	}
	if len(rest) == 1 {
		opts.file = rest[0]
	}
	return opts, 0, true
}

// restore puts a backup in place of the embedded store, or marks a
// restored PostgreSQL database, and says what the guard covers.
func restore(ctx context.Context, opts restoreOptions, getenv func(string) string, stdout io.Writer) error {
	url := getenv("COUNTERSIGN_DATABASE_URL")
	var r store.Restore
	switch {
	case opts.postgres && url == "":
		return errors.New("--postgres needs COUNTERSIGN_DATABASE_URL, connecting as the schema's owner to the restored database")
	case opts.postgres:
		db, err := postgres.Open(ctx, url)
		if err != nil {
			return fmt.Errorf("COUNTERSIGN_DATABASE_URL (%s): %w", config.DatabaseURLForm, err)
		}
		s := store.NewLedger(db, store.Options{})
		defer s.Close()
		// A dump of an older version lacks the restore marker's table.
		if _, err := s.Migrate(ctx, nil); err != nil {
			return err
		}
		if r, err = s.MarkRestored(ctx, store.RestoreParams{Source: "postgres", Window: opts.window}); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "marked the PostgreSQL database restored")
	case url != "":
		return errors.New("COUNTERSIGN_DATABASE_URL is set: restore PostgreSQL with pg_restore or your PITR procedure, then run `countersign restore --postgres` before starting serve (see the README's Backups)")
	default:
		dir, err := config.DataDir(getenv)
		if err != nil {
			return err
		}
		path := filepath.Join(dir, storeFile)
		res, err := embedded.Restore(ctx, opts.file, path, store.RestoreParams{Source: filepath.Base(opts.file), Window: opts.window})
		if err != nil {
			return err
		}
		r = res.Restore
		fmt.Fprintf(stdout, "restored %s to %s\n", opts.file, path)
		if res.Replaced != "" {
			fmt.Fprintf(stdout, "the store it replaced is kept as %s\n", res.Replaced)
		}
	}
	fmt.Fprintf(stdout, "%d unsettled executions, and those of requests created before %s, verify with their provider before a send\n",
		r.Flagged, r.GuardUntil.UTC().Format(time.RFC3339))
	return nil
}
