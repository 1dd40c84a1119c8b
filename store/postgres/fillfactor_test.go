package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// A version bump (the statement the execution and vote triggers run) on a
// request whose page intake filled stays on that page: PostgreSQL counts it
// as a HOT update, which writes no index entry. At the default fillfactor
// the page has no room and the bump is not HOT.
func TestVersionBumpsStayOnTheirPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	// Enough requests, stored one statement each as intake does, to fill
	// the table's first page several times over.
	for i := range 200 {
		insertRequest(t, b.Store, "wa_fill_"+string(rune('a'+i/26))+string(rune('a'+i%26)))
	}
	var hot int
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE requests SET version = version + 1 WHERE ctid = '(0,1)'`); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'requests'`).Scan(&hot)
	})
	if err != nil {
		t.Fatal(err)
	}
	if hot != 1 {
		t.Errorf("the version bump of a row on a full page was not a HOT update (%d HOT)", hot)
	}
}
