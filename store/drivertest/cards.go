package drivertest

import (
	"context"
	"errors"
	"testing"

	"github.com/countersign/countersign/store"
)

// The card state both drivers compute in SQL (the read and the convergence
// sweep's comparison) is store.CardStateOf, on every state a card can show.
func testCardStateIsCardStateOf(t *testing.T, b *Backend) {
	ctx := context.Background()
	exec := func(query string, args ...any) {
		t.Helper()
		if err := b.Exec(query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	type shown struct {
		name  string
		id    string
		round int
	}
	var cases []shown
	add := func(name string, req store.Request) { cases = append(cases, shown{name, req.ID, 1}) }

	add("pending", insertRequest(t, b, "wa_state_pending"))
	rejected, _, _, err := b.Decide(ctx, decide(insertRequest(t, b, "wa_state_rejected"), store.VerdictReject, "U1"))
	if err != nil {
		t.Fatal(err)
	}
	add("rejected", rejected)
	cancelled, _, err := b.CancelRequest(ctx, insertRequest(t, b, "wa_state_cancelled").ID, "U1", nil)
	if err != nil {
		t.Fatal(err)
	}
	add("cancelled", cancelled)
	expired := insertRequest(t, b, "wa_state_expired")
	exec("UPDATE requests SET status = 'expired' WHERE id = $1", expired.ID)
	add("expired", expired)
	undecided := insertRequest(t, b, "wa_state_approved_none")
	exec("UPDATE requests SET status = 'approved' WHERE id = $1", undecided.ID)
	add("approved without an execution", undecided)
	for i, state := range []store.ExecState{store.ExecReady, store.ExecClaimed, store.ExecSucceeded, store.ExecFailed,
		store.ExecUnknown, store.ExecNeedsReview, store.ExecSuperseded} {
		req, _ := approved(t, b, "wa_state_approved_"+string(state))
		exec("UPDATE executions SET state = $1, attempts = $2 WHERE request_id = $3", string(state), i, req.ID)
		add("approved, "+string(state), req)
	}
	superseded := insertRequest(t, b, "wa_state_superseded")
	exec("UPDATE requests SET round = 2 WHERE id = $1", superseded.ID)
	add("an earlier round", superseded)

	for _, c := range cases {
		want := cardStateOf(t, b, c.id, c.round)
		got, err := b.CardState(ctx, c.id, c.round)
		if err != nil || got != want {
			t.Errorf("%s: CardState = %q, %v; CardStateOf says %q", c.name, got, err, want)
		}
		// The sweep agrees: a card showing it is not stale.
		if _, err := b.RecordCard(ctx, store.Card{RequestID: c.id, Round: c.round, Surface: "slack", Ref: "C1/1." + c.name,
			RenderedState: want}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.EnqueueStaleCards(ctx, 100); err != nil || n != 0 {
		t.Errorf("EnqueueStaleCards with every card showing CardStateOf = %d, %v; want 0", n, err)
	}
	if err := b.MarkCardRendered(ctx, store.MarkCardRenderedParams{RequestID: cases[0].id, Round: 1, Surface: "slack", State: "stale"}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.EnqueueStaleCards(ctx, 100); err != nil || n != 1 {
		t.Errorf("EnqueueStaleCards with one stale card = %d, %v; want 1", n, err)
	}
}

// cardStateOf is store.CardStateOf on the rows as the Store reads them.
func cardStateOf(t *testing.T, b *Backend, id string, round int) string {
	t.Helper()
	ctx := context.Background()
	req, err := b.RequestByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var e *store.Execution
	d, err := b.DecisionFor(ctx, id, round)
	var x store.Execution
	if err == nil {
		x, err = b.ExecutionForDecision(ctx, d.ID)
	}
	switch {
	case err == nil:
		e = &x
	case !errors.Is(err, store.ErrNotFound):
		t.Fatalf("reading the execution of round %d: %v", round, err)
	}
	return store.CardStateOf(req, round, e)
}
