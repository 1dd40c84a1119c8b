package drivertest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// driverOf returns the driver under the backend's Ledger.
func driverOf(t *testing.T, b *Backend) store.Driver {
	t.Helper()
	l, ok := b.Store.(*store.Ledger)
	if !ok {
		t.Fatalf("backend store is %T, not a *store.Ledger", b.Store)
	}
	return l.Driver()
}

// Notify delivers the wake-ups it is handed when their transaction commits,
// none when it rolls back, and those of a write standing alone (Write).
func testNotifyWakesOnCommitOnly(t *testing.T, b *Backend) {
	ctx := context.Background()
	n := b.Notifier(t)
	d := driverOf(t, b)
	rolledBack, committed := insertRequest(t, b, "wa_notify_rollback"), insertRequest(t, b, "wa_notify_commit")
	lost, stopLost := n.SubscribeChange(rolledBack.ID)
	defer stopLost()
	change, stopChange := n.SubscribeChange(committed.ID)
	defer stopChange()
	ready, stopReady := n.SubscribeReady()
	defer stopReady()

	errRollback := errors.New("roll back")
	err := d.InTx(ctx, true, func(ex store.Executor) error {
		if err := ex.Notify(ctx, store.Wakeups{Changed: []string{rolledBack.ID}, Ready: true}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("InTx = %v, want the rollback", err)
	}
	if err := d.InTx(ctx, true, func(ex store.Executor) error {
		return ex.Notify(ctx, store.Wakeups{Changed: []string{committed.ID}})
	}); err != nil {
		t.Fatalf("InTx = %v", err)
	}
	waitWake(t, change, "a committed Notify")
	// The committed wake-up came after the rolled-back one would have.
	select {
	case <-lost:
		t.Error("a rolled-back Notify woke its request's subscriber")
	default:
	}
	select {
	case <-ready:
		t.Error("a rolled-back Notify woke the dispatcher")
	default:
	}
	if err := d.Write(ctx, func(ex store.Executor) error { return ex.Notify(ctx, store.Wakeups{Ready: true}) }); err != nil {
		t.Fatalf("Notify = %v", err)
	}
	waitWake(t, ready, "a Notify in Write")
}

// EnqueueStaleCards takes its thresholds, kinds and data from its caller.
func testEnqueueStaleCardsTakesItsThresholds(t *testing.T, b *Backend) {
	ctx := context.Background()
	d := driverOf(t, b)
	enqueue := func(p store.StaleCardsParams) (n int, err error) {
		err = d.Write(ctx, func(ex store.Executor) error {
			n, err = ex.EnqueueStaleCards(ctx, p)
			return err
		})
		return n, err
	}
	req := insertRequest(t, b, "wa_stale_params")
	// The intake's own post lands without a card being recorded.
	claimed, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimOutbox = %d rows, %v", len(claimed), err)
	}
	if err := b.MarkOutboxFailed(ctx, claimed[0].ID, "channel_not_found"); err != nil {
		t.Fatal(err)
	}
	p := store.StaleCardsParams{Limit: 10, RetryAfter: time.Hour, UnpostedAfter: 0,
		UpdateKind: store.OutboxUpdateCard, PostKind: store.OutboxPostCard, Data: map[string]any{"reason": "test"}}
	// The post failed within RetryAfter: nothing is queued.
	if n, err := enqueue(p); err != nil || n != 0 {
		t.Fatalf("EnqueueStaleCards within RetryAfter = %d, %v; want 0", n, err)
	}
	// The request has not gone unposted for UnpostedAfter: nothing either.
	p.RetryAfter, p.UnpostedAfter = 0, time.Hour
	if n, err := enqueue(p); err != nil || n != 0 {
		t.Fatalf("EnqueueStaleCards within UnpostedAfter = %d, %v; want 0", n, err)
	}
	p.UnpostedAfter = 0
	if n, err := enqueue(p); err != nil || n != 1 {
		t.Fatalf("EnqueueStaleCards past both = %d, %v; want 1", n, err)
	}
	rows, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(rows) != 1 {
		t.Fatalf("ClaimOutbox = %d rows, %v; want the sweep's post", len(rows), err)
	}
	if r := rows[0]; r.Kind != store.OutboxPostCard || r.RequestID != req.ID || r.Data["reason"] != "test" {
		t.Errorf("queued %+v, want a post of %s with the caller's data", r, req.ID)
	}
}

// The batch statements write what the Ledger says each row owes, beside the
// rows they move and only those, taking ids, rounds and times from them.
// Only PostgreSQL has them; elsewhere the Ledger composes the same rows from
// primitives (PostgresComposed holds the two to one behaviour).
func testBatchesWriteWhatTheyAreOwed(t *testing.T, b *Backend) {
	ctx := context.Background()
	bx := driverOf(t, b).Batch()
	if bx == nil {
		return
	}
	owed := func(kind string) store.Owed {
		return store.Owed{
			Events: []store.Event{{Actor: "tester", Kind: store.EventKind(kind), Data: map[string]any{"n": kind}}},
			Outbox: []store.NewOutbox{{Kind: store.OutboxThreadReply, Data: map[string]any{"reason": kind}}},
		}
	}
	existing := insertRequest(t, b, "wa_owed_existing")
	ps := []store.NewRequest{newRequest("wa_owed_new", "b"), newRequest("wa_owed_existing", "b")}
	for i := range ps {
		ps[i].EffectStrings = []string{}
	}
	results, err := bx.InsertRequestsBatch(ctx, ps, []store.Owed{owed("first"), owed("second")}, nil)
	if err != nil || len(results) != 2 || !results[0].Inserted || results[1].Inserted {
		t.Fatalf("InsertRequestsBatch = %+v, %v", results, err)
	}
	fresh := results[0].Request
	if kinds := eventKinds(t, b, fresh.ID); !slices.Equal(kinds, []string{"first"}) {
		t.Errorf("inserted request's events = %v, want [first]", kinds)
	}
	if kinds := eventKinds(t, b, existing.ID); slices.Contains(kinds, "second") {
		t.Errorf("existing request's events = %v: a replay wrote what an insert owes", kinds)
	}
	events, err := b.EventsFor(ctx, fresh.ID)
	if err != nil || len(events) != 1 || events[0].Actor != "tester" || events[0].Data["n"] != "first" ||
		!events[0].At.Equal(fresh.CreatedAt) {
		t.Errorf("inserted request's event = %+v, %v", events, err)
	}
	if n := b.Count(t, "SELECT count(*) FROM outbox WHERE kind = 'thread_reply'"); n != 1 {
		t.Errorf("thread replies after the insert = %d, want 1", n)
	}

	// Claims: one template for every row, merged with each claim's facts.
	approved(t, b, "wa_owed_claim")
	claims, err := bx.ClaimExecutionsBatch(ctx, claimParams("w", 10), owed("taken"))
	if err != nil || len(claims) != 1 {
		t.Fatalf("ClaimExecutionsBatch = %d claims, %v", len(claims), err)
	}
	c := claims[0]
	events, err = b.EventsFor(ctx, c.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if last.Kind != "taken" || last.Actor != "tester" || last.Data["n"] != "taken" || last.Data["execution_id"] == nil ||
		!last.At.Equal(c.UpdatedAt) {
		t.Errorf("claim's event = %+v", last)
	}

	// Transitions: each move's rows by its position; a move that did not
	// apply writes nothing.
	ts := []store.Transition{
		{ExecutionID: c.ID + 1000, Attempt: c.Attempts, To: store.ExecSucceeded},
		{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecSucceeded},
	}
	applied, err := bx.TransitionExecutionsBatch(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w"},
		ts, []store.Owed{owed("missed"), owed("landed")})
	if err != nil || len(applied) != 1 || applied[0].ExecutionID != c.ID {
		t.Fatalf("TransitionExecutionsBatch = %+v, %v", applied, err)
	}
	if kinds := eventKinds(t, b, c.RequestID); !slices.Contains(kinds, "landed") || slices.Contains(kinds, "missed") {
		t.Errorf("events after the transitions = %v, want landed and not missed", kinds)
	}
	if n := b.Count(t, "SELECT count(*) FROM outbox WHERE data->>'reason' = 'missed'"); n != 0 {
		t.Errorf("a move that did not apply queued %d outbox rows", n)
	}
}
