package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/pressly/goose/v3"

	"github.com/countersign/countersign/migrations"
)

// Migrate applies every pending migration and reports how many ran.
func (s *Driver) Migrate(ctx context.Context, logger *slog.Logger) (int, error) {
	s.migrating.Lock()
	defer s.migrating.Unlock()
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, s.writer, migrations.SQLite, opts...)
	if err != nil {
		return 0, fmt.Errorf("preparing migrations: %w", err)
	}
	// goose has no lock for SQLite, so two processes starting on a fresh file
	// can both try a migration: the second waits for the first's write lock,
	// then fails (the table exists) and rolls back. Each migration commits
	// with its version row, so running Up again applies only what is left.
	applied := 0
	for attempt := 1; ; attempt++ {
		results, err := provider.Up(ctx)
		if partial := (*goose.PartialError)(nil); errors.As(err, &partial) {
			results = partial.Applied // a failed Up returns what it applied here
		}
		applied += len(results)
		if err == nil {
			return applied, s.chainUnhashed(ctx)
		}
		if attempt == maxMigrateAttempts || ctx.Err() != nil {
			return applied, fmt.Errorf("applying migrations: %w", err)
		}
	}
}

// maxMigrateAttempts bounds Up's retries: one per migration another process
// may win, with room to spare.
const maxMigrateAttempts = 5
