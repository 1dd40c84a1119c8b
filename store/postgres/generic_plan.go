package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// A statement that takes its rows as arrays (unnest($1::text[]) …) is
// planned again at every call: PostgreSQL prices a custom plan with each
// array's real length and the generic plan with unnest's default of 100
// rows, so the generic plan always looks dearer and is never chosen. For
// intake's insert, planning was a quarter of the database's CPU per new
// intent (docs/BENCHMARKS.md, "Intake's statements"). A statement whose
// every lookup is by a key (its plan cannot get worse as tables grow; a
// test holds its generic plan to index scans on an empty database) runs
// with the generic plan, cached on the connection: the setting goes out in
// the same round trip, is local to the statement's transaction, and is
// reset after it for the rest of an explicit transaction.
const (
	genericPlanOn  = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`
	genericPlanOff = `RESET plan_cache_mode`
)

// queryGeneric runs sql with its generic plan and hands its rows to read.
// The results are read through the batch's callbacks, so statements a
// pipeline holds go out first and are answered in their turn.
func (e executor) queryGeneric(ctx context.Context, sql string, args []any, read func(pgx.Rows) error) error {
	b := &pgx.Batch{}
	b.Queue(genericPlanOn)
	b.Queue(sql, args...).Query(read)
	b.Queue(genericPlanOff)
	return e.db.SendBatch(ctx, b).Close()
}
