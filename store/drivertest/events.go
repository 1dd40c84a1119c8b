package drivertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func testEventsAreAppendOnly(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_appendonly")
	refused := []string{
		`UPDATE events SET actor = 'someone else'`,
		`DELETE FROM events`,
		`DELETE FROM events WHERE kind = 'requested'`,
	}
	if b.Name != "sqlite" {
		// SQLite has no TRUNCATE; its DELETE refusal covers emptying the table.
		refused = append(refused, `TRUNCATE events`, `TRUNCATE events CASCADE`)
	}
	for _, query := range refused {
		if err := b.Exec(query); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want an append-only refusal", query, err)
		}
	}
	if err := b.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: "U1", Kind: "noted", Data: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	events, err := b.EventsFor(ctx, req.ID)
	if err != nil || len(events) != 2 || events[0].Actor != "agent:agent" || events[0].Kind != "requested" ||
		events[0].Data["key"] != "wa_appendonly" || events[1].Kind != "noted" || events[1].Data["n"] != float64(1) ||
		events[1].At.Before(events[0].At) || events[1].ID <= events[0].ID {
		t.Fatalf("events after refused changes = %+v, %v", events, err)
	}
}

func testChangesWakeSubscribers(t *testing.T, b *Backend) {
	ctx := context.Background()
	n := b.Notifier(t)
	req := insertRequest(t, b, "wa_wake")
	other := insertRequest(t, b, "wa_wake_other")
	change, stop := n.SubscribeChange(req.ID)
	defer stop()
	otherChange, stopOther := n.SubscribeChange(other.ID)
	defer stopOther()
	ready, stopReady := n.SubscribeReady()
	defer stopReady()

	// Approval changes the request and makes an execution ready.
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	waitWake(t, change, "the decision")
	waitWake(t, ready, "the ready execution")
	// A claim changes the execution's state.
	claimOne(t, b, "w")
	waitWake(t, change, "the claim")
	// A cancel wakes only its own request's subscribers. The other
	// subscriber's channel is read after a wake the first one gets from a
	// later change, so a stray wake would have arrived by then.
	if _, ok, err := b.CancelRequest(ctx, other.ID, "a", nil); err != nil || !ok {
		t.Fatalf("CancelRequest = %v, %v", ok, err)
	}
	waitWake(t, otherChange, "the cancel")
	now := time.Now().Add(time.Hour)
	if n, err := b.ExpireClaims(ctx, &now, 10); err != nil || n != 1 {
		t.Fatalf("ExpireClaims = %d, %v", n, err)
	}
	waitWake(t, change, "the expired claim")
	select {
	case <-otherChange:
		t.Error("a change to one request woke another's subscriber")
	default:
	}
	select {
	case <-ready:
		t.Error("a move to unknown woke the ready subscribers")
	default:
	}
}

func testExecutionsBackToReadyWakeTheDispatcher(t *testing.T, b *Backend) {
	ctx := context.Background()
	n := b.Notifier(t)
	req, _ := approved(t, b, "wa_wake_ready")
	c := toNeedsReview(t, b)
	ready, stop := n.SubscribeReady()
	defer stop()
	change, stopChange := n.SubscribeChange(req.ID)
	defer stopChange()
	if ok, err := b.Resolve(ctx, store.ResolveParams{RequestID: req.ID, ExecutionID: c.ID, To: store.ExecReady, By: "U9"}); err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	waitWake(t, ready, "a resolve to ready")
	waitWake(t, change, "a resolve to ready")
	c = claimOne(t, b, "w")
	if applied, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"},
		[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecReady}}); err != nil || len(applied) != 1 {
		t.Fatalf("retry = %v, %v", applied, err)
	}
	waitWake(t, ready, "a retry")
}
