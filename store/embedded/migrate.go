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
		// A failed Up returns no results: what it applied before the
		// failure is in the PartialError.
		if partial := (*goose.PartialError)(nil); errors.As(err, &partial) {
			results = partial.Applied
		}
		applied += countApplied(results)
		if err == nil {
			return applied, nil
		}
		if attempt == maxMigrateAttempts || ctx.Err() != nil {
			return applied, fmt.Errorf("applying migrations: %w", err)
		}
	}
}

// maxMigrateAttempts bounds Up's retries: one per migration another process
// may win, with room to spare.
const maxMigrateAttempts = 5

// countApplied counts the migrations Up applied, leaving out one that failed.
func countApplied(results []*goose.MigrationResult) int {
	n := 0
	for _, r := range results {
		if r.Error == nil {
			n++
		}
	}
	return n
}
