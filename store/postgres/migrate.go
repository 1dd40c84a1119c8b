package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/countersign/countersign/migrations"
)

// migrationLockID is the advisory lock that serialises migrations across
// replicas starting at once.
const migrationLockID = 0x636f756e746572 // "counter"

// ErrMigratePrivilege is returned by Migrate when migrations are pending and
// the connected role may not apply them (the runtime role of GrantAppRole
// may not): the schema's owner must migrate first.
var ErrMigratePrivilege = errors.New("the schema has migrations pending that this database role may not apply")

// Migrate applies every pending migration under an advisory lock and reports
// how many ran. With none pending it only reads the applied versions, so the
// runtime role of GrantAppRole may call it.
func (d *Driver) Migrate(ctx context.Context, logger *slog.Logger) (int, error) {
	sqlDB := stdlib.OpenDBFromPool(d.Pool)
	defer sqlDB.Close()
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return 0, fmt.Errorf("creating migration lock: %w", err)
	}
	opts := []goose.ProviderOption{goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true)}
	if logger != nil {
		opts = append(opts, goose.WithSlog(logger))
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.Postgres, opts...)
	if err != nil {
		return 0, fmt.Errorf("preparing migrations: %w", err)
	}
	results, err := provider.Up(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
		return len(results), fmt.Errorf("%w (%s)", ErrMigratePrivilege, pgErr.Message)
	}
	if err != nil {
		return len(results), fmt.Errorf("applying migrations: %w", err)
	}
	return len(results), nil
}
