package store

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/countersign/countersign/migrations"
)

// migrationLockID is the advisory lock that serialises migrations across
// replicas starting at once.
const migrationLockID = 0x636f756e746572 // "counter"

// Migrate applies every pending migration under an advisory lock and reports
// how many ran.
func (db *DB) Migrate(ctx context.Context, logger *slog.Logger) (int, error) {
	sqlDB := stdlib.OpenDBFromPool(db.Pool)
	defer sqlDB.Close()
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return 0, fmt.Errorf("creating migration lock: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.FS, opts...)
	if err != nil {
		return 0, fmt.Errorf("preparing migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return len(results), fmt.Errorf("applying migrations: %w", err)
	}
	return len(results), nil
}
