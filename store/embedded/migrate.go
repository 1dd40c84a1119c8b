package embedded

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/pressly/goose/v3"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate applies every pending migration and reports how many ran.
func (s *Store) Migrate(ctx context.Context, logger *slog.Logger) (int, error) {
	s.migrating.Lock()
	defer s.migrating.Unlock()
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return 0, fmt.Errorf("preparing migrations: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, s.writer, files, opts...)
	if err != nil {
		return 0, fmt.Errorf("preparing migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return len(results), fmt.Errorf("applying migrations: %w", err)
	}
	return len(results), nil
}
