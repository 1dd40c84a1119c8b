package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// Intake's insert keeps one generic plan per connection however the tables
// grow, so that plan, built on an empty database, must find every row it
// reads through an index: a sequential scan of the tombstones or the
// requests there would read the whole table at every intake a year later.
func TestIntakeGenericPlanScansNoTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Prepare(ctx, "insert_requests", postgres.Query("insert_requests")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", 22), ", ")
	rows, err := conn.Query(ctx, "EXPLAIN EXECUTE insert_requests("+nulls+")", pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "Index Only Scan using tombstones_pkey") {
		t.Errorf("the plan reads the tombstones through no index:\n%s", plan)
	}
	if strings.Contains(plan, "Seq Scan") {
		t.Errorf("the generic plan scans a table:\n%s", plan)
	}
}

// Intake's insert runs on its generic plan (planned once per connection,
// not at every batch), and the setting that asks for it does not outlive
// the statement: the connection's other statements keep PostgreSQL's
// choice.
func TestIntakeRunsOnItsGenericPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := postgres.Open(ctx, url+sep+"pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const batches = 8
	for i := range batches {
		ps := make([]store.NewRequest, 3)
		owed := make([]store.Owed, 3)
		for j := range ps {
			ps[j] = store.NewRequest{
				Key: fmt.Sprintf("wa_generic_%d_%d", i, j), BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "t",
				Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour,
				EffectStrings: []string{},
			}
			owed[j] = store.Owed{Events: []store.Event{{Actor: "agent:agent", Kind: store.EventRequested}}}
		}
		results, err := db.Batch().InsertRequestsBatch(ctx, ps, owed, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if !r.Inserted {
				t.Fatalf("batch %d: %s not inserted", i, r.Key)
			}
		}
	}
	var generic, custom int64
	var mode string
	err = db.Pool.QueryRow(ctx, `SELECT generic_plans, custom_plans, current_setting('plan_cache_mode')
		FROM pg_prepared_statements WHERE statement LIKE '%What each inserted request owes%'`).Scan(&generic, &custom, &mode)
	if err != nil {
		t.Fatal(err)
	}
	if generic != batches || custom != 0 {
		t.Errorf("intake's insert ran on %d generic and %d custom plans, want %d generic", generic, custom, batches)
	}
	if mode != "auto" {
		t.Errorf("plan_cache_mode after intake = %q, want auto", mode)
	}
}
