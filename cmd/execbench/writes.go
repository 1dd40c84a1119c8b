package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// writes counts the rows a burn-down leaves behind, to say what each
// execution writes beside what River writes for a job (one row, inserted,
// then updated twice: running, completed). Updates are counted by what they
// leave: a request's version goes up at every change an agent can see, and
// an execution's claims and outcome.
type writes struct {
	events, outbox, callbacks, versionBumps int64
}

func countWrites(ctx context.Context, pool *pgxpool.Pool) (writes, error) {
	var w writes
	err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM outbox),
		(SELECT count(*) FROM callbacks), (SELECT coalesce(sum(version), 0) FROM requests)`).
		Scan(&w.events, &w.outbox, &w.callbacks, &w.versionBumps)
	return w, err
}

func (w writes) minus(before writes) writes {
	return writes{w.events - before.events, w.outbox - before.outbox,
		w.callbacks - before.callbacks, w.versionBumps - before.versionBumps}
}

func (w writes) per(n int) string {
	f := func(v int64) float64 { return float64(v) / float64(n) }
	return fmt.Sprintf("%.2f audit events, %.2f outbox rows, %.2f callbacks, %.2f request updates",
		f(w.events), f(w.outbox), f(w.callbacks), f(w.versionBumps))
}
