package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// The chain trigger's hash is inlined by the planner: a SQL function it
// cannot inline is parsed and planned again in every transaction that
// writes an event, which was most of what the chain cost a new intent.
// The inlined expression still gives what store.EventHash gives.
func TestEventHashIsInlinedAndMatchesGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := postgres.Open(ctx, storetest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	const call = `countersign_event_hash('ab', 7::bigint, '6f1e8b1e-6d1f-4f7e-9d53-3b1c1c1c1c1c'::uuid, 3,
		'2026-01-01 00:00:00.123456+00'::timestamptz, 'U0ALICE', 'decided', '{"to": "approved"}'::jsonb)`
	rows, err := db.Pool.Query(ctx, `EXPLAIN (VERBOSE, COSTS OFF) SELECT `+call)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "countersign_event_hash") || !strings.Contains(plan, "sha256") {
		t.Errorf("the event hash is not inlined: %s", plan)
	}
	var got string
	if err := db.Pool.QueryRow(ctx, `SELECT `+call).Scan(&got); err != nil {
		t.Fatal(err)
	}
	ev := store.AuditEvent{ID: 7, RequestID: "6f1e8b1e-6d1f-4f7e-9d53-3b1c1c1c1c1c", Seq: 3,
		Actor: "U0ALICE", Kind: "decided", Data: `{"to": "approved"}`, PrevHash: "ab"}
	ev.At, _ = time.Parse(time.RFC3339Nano, "2026-01-01T00:00:00.123456Z")
	if want := store.EventHash(ev); got != want {
		t.Errorf("PostgreSQL's hash %s, Go's %s", got, want)
	}
}
