package benchserve

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier is what DatabaseCPU needs of a pool or a connection.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// DatabaseCPU sums the CPU time of the PostgreSQL backends connected to
// database. Pools keep their connections for the whole run, so the
// difference over a phase is the database work the phase caused.
func DatabaseCPU(ctx context.Context, db Querier, database string) time.Duration {
	rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, database)
	if err != nil {
		return 0
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, pid := range pids {
		total += CPUTime(int(pid))
	}
	return total
}
