package drivertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func testOutboxClaimDeliverRetry(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_outbox")
	if err := b.EnqueueOutbox(ctx, store.OutboxThreadReply, req.ID, 1, map[string]any{"reason": "why"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.CountOutboxBacklog(ctx); err != nil || n != 2 {
		t.Errorf("outbox backlog = %d, %v; want the card and the reply", n, err)
	}
	rows, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(rows) != 2 || rows[0].Kind != store.OutboxPostCard || rows[1].Kind != store.OutboxThreadReply ||
		rows[1].Data["reason"] != "why" || rows[0].Attempts != 1 || rows[0].RequestID != req.ID || rows[0].Round != 1 {
		t.Fatalf("ClaimOutbox = %+v, %v", rows, err)
	}
	// Leased: nothing more to claim until the lease runs out.
	if again, err := b.ClaimOutbox(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("second ClaimOutbox = %d, %v", len(again), err)
	}
	if err := b.MarkOutboxDelivered(ctx, rows[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if pending, err := b.PostPending(ctx, req.ID, 1); err != nil || pending {
		t.Errorf("PostPending after delivery = %v, %v", pending, err)
	}
	// A real attempt that failed keeps its count and error; a postponed
	// one gives the claim back and keeps the earlier error.
	if err := b.RetryOutbox(ctx, store.RetryOutboxParams{ID: rows[1].ID, Reason: "rate_limited", Attempted: true}); err != nil {
		t.Fatal(err)
	}
	retried, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(retried) != 1 || retried[0].Attempts != 2 || retried[0].LastError != "rate_limited" {
		t.Fatalf("after retry = %+v, %v", retried, err)
	}
	if err := b.RetryOutbox(ctx, store.RetryOutboxParams{ID: rows[1].ID, Reason: "paused"}); err != nil {
		t.Fatal(err)
	}
	postponed, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(postponed) != 1 || postponed[0].Attempts != 2 || postponed[0].LastError != "rate_limited" {
		t.Fatalf("after postpone = %+v, %v", postponed, err)
	}
	if err := b.MarkOutboxFailed(ctx, rows[1].ID, "channel_not_found"); err != nil {
		t.Fatal(err)
	}
	// Settled rows ignore later marks.
	if err := b.MarkOutboxDelivered(ctx, rows[1].ID, "late"); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE state = 'failed' AND last_error = 'channel_not_found'`); n != 1 {
		t.Errorf("failed rows = %d, want 1", n)
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE state = 'pending'`); n != 0 {
		t.Errorf("pending rows = %d, want 0", n)
	}
	if n, err := b.CountOutboxBacklog(ctx); err != nil || n != 0 {
		t.Errorf("outbox backlog once delivered and failed = %d, %v; want 0", n, err)
	}
}

func testOutboxClaimsAreExclusiveUnderConcurrency(t *testing.T, b *Backend) {
	ctx := context.Background()
	const rows, workers = 30, 5
	req := insertRequest(t, b, "wa_outbox_race")
	for range rows - 1 {
		if err := b.EnqueueOutbox(ctx, store.OutboxUpdateCard, req.ID, 1, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := make(map[int64]int)
	errs := make([]error, workers)
	Release(workers, func(i int) {
		for {
			claimed, err := b.ClaimOutbox(ctx, 4, time.Hour)
			if err != nil || len(claimed) == 0 {
				errs[i] = err
				return
			}
			mu.Lock()
			for _, r := range claimed {
				seen[r.ID]++
			}
			mu.Unlock()
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if len(seen) != rows {
		t.Errorf("%d rows claimed, want %d", len(seen), rows)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("row %d claimed %d times", id, n)
		}
	}
}

func testCardsRecordFirstAndConverge(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_card")
	if _, err := b.CardFor(ctx, req.ID, 1, "slack"); err != store.ErrNotFound {
		t.Fatalf("CardFor before posting = %v, want ErrNotFound", err)
	}
	first, err := b.RecordCard(ctx, store.Card{RequestID: req.ID, Round: 1, Surface: "slack", Ref: "C1/1.1", RenderedState: "pending"})
	if err != nil || first.Ref != "C1/1.1" {
		t.Fatalf("RecordCard = %+v, %v", first, err)
	}
	second, err := b.RecordCard(ctx, store.Card{RequestID: req.ID, Round: 1, Surface: "slack", Ref: "C2/2.2", RenderedState: "pending"})
	if err != nil || second.Ref != "C1/1.1" || second.Surface != "slack" {
		t.Fatalf("second RecordCard = %+v, %v; want the first card", second, err)
	}
	// When reviewers could first see the card: the first post's time,
	// whoever reads it.
	if first.PostedAt.IsZero() || !second.PostedAt.Equal(first.PostedAt) {
		t.Errorf("PostedAt = %v then %v; want the first post's, twice", first.PostedAt, second.PostedAt)
	}
	if read, err := b.CardFor(ctx, req.ID, 1, "slack"); err != nil || !read.PostedAt.Equal(first.PostedAt) {
		t.Errorf("CardFor PostedAt = %v, %v; want %v", read.PostedAt, err, first.PostedAt)
	}
	if got, _ := b.RequestByID(ctx, req.ID); got.CardSurface != "slack" || got.CardRef != "C1/1.1" {
		t.Errorf("request card = %s %s", got.CardSurface, got.CardRef)
	}
	// Another surface's card of the round stands beside it; the request
	// keeps pointing at the first.
	other, err := b.RecordCard(ctx, store.Card{RequestID: req.ID, Round: 1, Surface: "memory", Ref: "m-1", RenderedState: "pending"})
	if err != nil || other.Ref != "m-1" || other.Surface != "memory" {
		t.Fatalf("another surface's RecordCard = %+v, %v", other, err)
	}
	if got, _ := b.RequestByID(ctx, req.ID); got.CardSurface != "slack" || got.CardRef != "C1/1.1" {
		t.Errorf("request card after another surface's = %s %s", got.CardSurface, got.CardRef)
	}
	if err := b.MarkCardRendered(ctx, store.MarkCardRenderedParams{RequestID: req.ID, Round: 1, Surface: "memory", State: "rejected", Settled: true}); err != nil {
		t.Fatal(err)
	}
	// The card shows pending: nothing to converge.
	if n, err := b.EnqueueStaleCards(ctx, 10); err != nil || n != 0 {
		t.Fatalf("EnqueueStaleCards when current = %d, %v", n, err)
	}
	// The request is rejected; the update is queued by Decide, so the sweep
	// waits for it, and queues its own once that update has been delivered
	// without the card recording the new state.
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	if n, err := b.EnqueueStaleCards(ctx, 10); err != nil || n != 0 {
		t.Fatalf("EnqueueStaleCards with an update queued = %d, %v", n, err)
	}
	claimed, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range claimed {
		if err := b.MarkOutboxDelivered(ctx, r.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := b.EnqueueStaleCards(ctx, 10); err != nil || n != 1 {
		t.Fatalf("EnqueueStaleCards with a stale card = %d, %v; want 1", n, err)
	}
	// The update is for the stale card's surface alone.
	if stale, err := b.ClaimOutbox(ctx, 10, time.Millisecond); err != nil || len(stale) != 1 || stale[0].Surface != "slack" {
		t.Fatalf("the sweep's update = %+v, %v; want one for slack", stale, err)
	} else if err := b.RetryOutbox(ctx, store.RetryOutboxParams{ID: stale[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := b.MarkCardRendered(ctx, store.MarkCardRenderedParams{RequestID: req.ID, Round: 1, Surface: "slack", State: "rejected", Settled: true}); err != nil {
		t.Fatal(err)
	}
	if c, err := b.CardFor(ctx, req.ID, 1, "slack"); err != nil || c.RenderedState != "rejected" || !c.Settled {
		t.Errorf("CardFor = %+v, %v", c, err)
	}
	if _, err := b.CardState(ctx, "00000000-0000-4000-8000-000000000000", 1); err != store.ErrNotFound {
		t.Errorf("CardState(missing) = %v, want ErrNotFound", err)
	}
}

// testOutboxRenew: a renewal keeps a claim in flight from being claimed
// again, never brings a later retry forward, and leaves settled rows alone.
func testOutboxRenew(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_outbox_renew")
	if err := b.EnqueueOutbox(ctx, store.OutboxThreadReply, req.ID, 1, map[string]any{"reason": "why"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	rows, err := b.ClaimOutbox(ctx, 10, time.Millisecond)
	if err != nil || len(rows) != 2 {
		t.Fatalf("ClaimOutbox = %d, %v", len(rows), err)
	}
	time.Sleep(5 * time.Millisecond) // both leases have run out
	if err := b.RetryOutbox(ctx, store.RetryOutboxParams{ID: rows[1].ID, Delay: time.Hour, Reason: "paused"}); err != nil {
		t.Fatal(err)
	}
	if err := b.RenewOutbox(ctx, []int64{rows[0].ID, rows[1].ID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if again, err := b.ClaimOutbox(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("after renewing, ClaimOutbox = %d rows, %v; want the renewed claim kept", len(again), err)
	}
	// A renewal with a short lease leaves the retry an hour away.
	if err := b.RenewOutbox(ctx, []int64{rows[1].ID}, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if again, err := b.ClaimOutbox(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a renewal brought a retry forward: ClaimOutbox = %d rows, %v", len(again), err)
	}
	if err := b.MarkOutboxDelivered(ctx, rows[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if err := b.RenewOutbox(ctx, []int64{rows[0].ID}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE state = 'delivered'`); n != 1 {
		t.Errorf("delivered rows = %d after a renewal, want 1", n)
	}
}

// A card update is not queued while one for the same request and round
// waits for its first claim: the waiting one draws the card as it is when
// sent. Once a delivery holds it, a change queues a new one.
func testCardUpdatesCoalesceWhileOneWaits(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_coalesce")
	updates := func() int {
		return b.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'update_card' AND request_id = '`+req.ID+`'`)
	}
	if res := vote(t, b, req, store.VerdictApprove, "U1", ""); !res.Decided {
		t.Fatalf("approve: %+v", res)
	}
	c := claimOne(t, b, "w") // the approval's update waits: the claim's joins it
	if n := updates(); n != 1 {
		t.Fatalf("%d card updates after the approval and the claim, want 1", n)
	}
	rows, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(rows) != 2 {
		t.Fatalf("ClaimOutbox = %+v, %v", rows, err)
	}
	applied, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"},
		[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecSucceeded, Status: 200}})
	if err != nil || len(applied) != 1 {
		t.Fatalf("succeed: %v, %v", applied, err)
	}
	if n := updates(); n != 2 {
		t.Errorf("%d card updates after the outcome, want 2: the claimed one cannot show it", n)
	}
}

// testOutboxFansOutToSurfaces: a row for every surface of its tool is handed
// to each named surface as a row of its own, with its data, and is itself
// delivered; the copies are claimed with their surface.
func testOutboxFansOutToSurfaces(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_fan_out")
	claimed, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].Surface != "" {
		t.Fatalf("ClaimOutbox = %+v, %v; want the intake's post for every surface", claimed, err)
	}
	row := claimed[0]
	row.Data = map[string]any{"reason": "test"}
	if err := b.FanOutOutbox(ctx, row, []string{"slack", "memory"}); err != nil {
		t.Fatal(err)
	}
	copies, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(copies) != 2 {
		t.Fatalf("ClaimOutbox after the fan-out = %+v, %v; want two rows", copies, err)
	}
	surfaces := map[string]bool{}
	for _, c := range copies {
		surfaces[c.Surface] = true
		if c.Kind != row.Kind || c.RequestID != req.ID || c.Round != row.Round || c.Data["reason"] != "test" || c.Attempts != 1 {
			t.Errorf("copy = %+v; want row %+v's kind, request, round and data, first attempt", c, row)
		}
	}
	if !surfaces["slack"] || !surfaces["memory"] {
		t.Errorf("copies for %v; want slack and memory", surfaces)
	}
	if n, err := b.CountOutboxBacklog(ctx); err != nil || n != 2 {
		t.Errorf("backlog = %d, %v; want the two copies (the original delivered)", n, err)
	}
}
