package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// A transaction holds its write-only statements back and sends them with the
// next one: each still runs in its place, a read after it sees it, and its
// error fails the transaction with everything written before it.
func TestHeldWritesRunInTheirPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	req := insertRequest(t, b.Store, "wa_held")
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	backlog := func() int {
		n, err := b.CountOutboxBacklog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := backlog()

	// A read after held writes sees them: rows (EventsFor) and one row
	// (CountOutboxBacklog, a QueryRow).
	err = db.InTx(ctx, true, func(ex store.Executor) error {
		if err := ex.InsertEvents(ctx, []store.Event{{RequestID: req.ID, Actor: "test", Kind: "held"}}); err != nil {
			return err
		}
		if err := ex.InsertOutbox(ctx, []store.NewOutbox{{Kind: store.OutboxUpdateCard, RequestID: req.ID, Round: 1, At: time.Now()}}); err != nil {
			return err
		}
		events, err := ex.EventsFor(ctx, req.ID)
		if err != nil || events[len(events)-1].Kind != "held" {
			t.Errorf("EventsFor after a held insert = %d events, %v; want the held one last", len(events), err)
		}
		if n, err := ex.CountOutboxBacklog(ctx); err != nil || n != before+1 {
			t.Errorf("CountOutboxBacklog after a held insert = %d, %v; want %d", n, err, before+1)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("InTx = %v", err)
	}

	// A held write that fails (a second live execution) fails the
	// transaction at the commit, and what ran before it is rolled back.
	err = db.InTx(ctx, true, func(ex store.Executor) error {
		if err := ex.SetCard(ctx, req.ID, "slack", "C1/1.0"); err != nil {
			return err
		}
		return ex.InsertExecution(ctx, store.NewExecution{RequestID: req.ID, DecisionID: 1, MaxAttempts: 3, At: time.Now()})
	})
	if !errors.Is(err, store.ErrConflict) {
		t.Errorf("InTx with a failing held write = %v, want ErrConflict", err)
	}
	// The same failure goes out with the next read, which returns it.
	err = db.InTx(ctx, true, func(ex store.Executor) error {
		if err := ex.InsertExecution(ctx, store.NewExecution{RequestID: req.ID, DecisionID: 1, MaxAttempts: 3, At: time.Now()}); err != nil {
			t.Errorf("a held write returned %v before it was sent", err)
		}
		_, err := ex.RequestByID(ctx, req.ID)
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("the read after a failing held write = %v, want ErrConflict", err)
		}
		return err
	})
	if err == nil {
		t.Error("InTx after a failing held write committed")
	}
	after := must(b.RequestByID(ctx, req.ID))
	if after.CardSurface != "" {
		t.Errorf("the card set before a failing held write stayed: %q", after.CardSurface)
	}
	if n := b.Count(t, "SELECT count(*) FROM executions"); n != 1 {
		t.Errorf("%d executions, want 1", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
