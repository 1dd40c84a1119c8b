package drivertest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func dueNudges(t *testing.T, b *Backend, kind store.NudgeKind, after time.Duration, now *time.Time) []store.Request {
	t.Helper()
	due, err := b.DueNudges(context.Background(), store.DueNudgesParams{Kind: kind, Tool: tool, After: after, Now: now, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return due
}

func postCard(t *testing.T, b *Backend, requestID string, round int) {
	t.Helper()
	if _, err := b.RecordCard(context.Background(), store.Card{RequestID: requestID, Round: round, Surface: "slack",
		Ref: "C1/" + time.Now().Format("150405.000000"), RenderedState: "pending"}); err != nil {
		t.Fatal(err)
	}
}

// A request is due a reminder once its round has waited long enough and its
// card is posted; queueing it writes one thread reply and one audit event,
// and a second queueing of the same kind and round writes nothing.
func testNudgesQueueOncePerRound(t *testing.T, b *Backend) {
	ctx := context.Background()
	p := newRequest("wa_nudge", "sha256:b")
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	p.Now, p.TTL = &twoHoursAgo, 72*time.Hour
	req := insert(t, b, p)
	insertRequest(t, b, "wa_nudge_fresh") // pending, but not due
	if due := dueNudges(t, b, store.NudgeReminder, time.Hour, nil); len(due) != 0 {
		t.Fatalf("due before the card is posted: %d", len(due))
	}
	postCard(t, b, req.ID, 1)
	due := dueNudges(t, b, store.NudgeReminder, time.Hour, nil)
	if len(due) != 1 || due[0].ID != req.ID {
		t.Fatalf("due reminders = %+v, want %s", due, req.ID)
	}
	if late := dueNudges(t, b, store.NudgeReminder, 3*time.Hour, nil); len(late) != 0 {
		t.Fatalf("due after 3h of a round 2h old: %d", len(late))
	}

	n := store.NewNudge{Kind: store.NudgeReminder, RequestID: req.ID, Round: 1, Mention: []string{"U1", "S2"},
		Data: map[string]any{"after": "1h0m0s"}}
	queued, err := b.QueueNudges(ctx, []store.NewNudge{n})
	if err != nil || len(queued) != 1 {
		t.Fatalf("QueueNudges = %d, %v", len(queued), err)
	}
	if again, err := b.QueueNudges(ctx, []store.NewNudge{n}); err != nil || len(again) != 0 {
		t.Fatalf("QueueNudges again = %d, %v; want nothing queued", len(again), err)
	}
	if due := dueNudges(t, b, store.NudgeReminder, time.Hour, nil); len(due) != 0 {
		t.Fatalf("still due after queueing: %d", len(due))
	}
	// The escalation is a kind of its own.
	if due := dueNudges(t, b, store.NudgeEscalation, time.Hour, nil); len(due) != 1 {
		t.Fatalf("due escalations = %d, want 1", len(due))
	}
	if ok, err := b.NudgeQueued(ctx, req.ID, 1, store.NudgeReminder); err != nil || !ok {
		t.Errorf("NudgeQueued(reminder) = %v, %v", ok, err)
	}
	if ok, err := b.NudgeQueued(ctx, req.ID, 1, store.NudgeEscalation); err != nil || ok {
		t.Errorf("NudgeQueued(escalation) = %v, %v", ok, err)
	}

	rows, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var replies []store.OutboxRow
	for _, r := range rows {
		if r.Kind == store.OutboxThreadReply {
			replies = append(replies, r)
		}
	}
	if len(replies) != 1 || replies[0].RequestID != req.ID || replies[0].Round != 1 ||
		replies[0].Data["nudge"] != "reminder" || replies[0].Data["mention"] != "U1 S2" || replies[0].Data["after"] != "1h0m0s" {
		t.Fatalf("thread replies = %+v", replies)
	}
	events, err := b.EventsFor(ctx, req.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if countKind(eventKinds(t, b, req.ID), "reminded") != 1 || last.Kind != "reminded" || last.Actor != "system" ||
		last.Data["mention"] != "U1 S2" || last.Data["round"] != float64(1) {
		t.Fatalf("events = %+v", events)
	}
}

// Nothing is queued for a request that left pending, even one the caller
// still thought due.
func testNudgesSkipRequestsNoLongerPending(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_nudge_decided")
	postCard(t, b, req.ID, 1)
	if due := dueNudges(t, b, store.NudgeReminder, 0, nil); len(due) != 1 {
		t.Fatalf("due = %d, want 1", len(due))
	}
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	if due := dueNudges(t, b, store.NudgeReminder, 0, nil); len(due) != 0 {
		t.Fatalf("due after the decision = %d", len(due))
	}
	queued, err := b.QueueNudges(ctx, []store.NewNudge{{Kind: store.NudgeReminder, RequestID: req.ID, Round: 1}})
	if err != nil || len(queued) != 0 {
		t.Fatalf("QueueNudges on a decided request = %d, %v", len(queued), err)
	}
	if n := countKind(eventKinds(t, b, req.ID), "reminded"); n != 0 {
		t.Errorf("reminded events = %d", n)
	}
}

// A round re-opened after its approval was superseded counts from when it
// began, and gets a reminder of its own.
func testReopenedRoundGetsItsOwnNudges(t *testing.T, b *Backend) {
	ctx := context.Background()
	p := newRequest("wa_nudge_reopened", "sha256:b")
	twoHoursAgo := time.Now().Add(-2 * time.Hour)
	p.Now, p.TTL = &twoHoursAgo, 72*time.Hour
	req := insert(t, b, p)
	postCard(t, b, req.ID, 1)
	if queued, err := b.QueueNudges(ctx, []store.NewNudge{{Kind: store.NudgeReminder, RequestID: req.ID, Round: 1}}); err != nil || len(queued) != 1 {
		t.Fatalf("round 1 reminder = %d, %v", len(queued), err)
	}
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	c := claimOne(t, b, "w")
	if round, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "approval_expired", RequestTTL: 72 * time.Hour}); err != nil || !ok || round != 2 {
		t.Fatalf("Supersede = %d, %v, %v", round, ok, err)
	}
	postCard(t, b, req.ID, 2)
	// Created two hours ago, but its round began just now.
	if due := dueNudges(t, b, store.NudgeReminder, time.Hour, nil); len(due) != 0 {
		t.Fatalf("round 2 due at once: %d", len(due))
	}
	later := time.Now().Add(61 * time.Minute)
	due := dueNudges(t, b, store.NudgeReminder, time.Hour, &later)
	if len(due) != 1 || due[0].Round != 2 {
		t.Fatalf("round 2 due an hour later = %+v", due)
	}
	if queued, err := b.QueueNudges(ctx, []store.NewNudge{{Kind: store.NudgeReminder, RequestID: req.ID, Round: 2}}); err != nil || len(queued) != 1 {
		t.Fatalf("round 2 reminder = %d, %v", len(queued), err)
	}
	if n := countKind(eventKinds(t, b, req.ID), "reminded"); n != 2 {
		t.Errorf("reminded events = %d, want one per round", n)
	}
}

// Sweeps queueing the same nudge at once queue it once.
func testConcurrentNudgesQueueOnce(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_nudge_race")
	postCard(t, b, req.ID, 1)
	const sweeps = 6
	var queued atomic.Int64
	errs := make([]error, sweeps)
	Release(sweeps, func(i int) {
		got, err := b.QueueNudges(ctx, []store.NewNudge{{Kind: store.NudgeEscalation, RequestID: req.ID, Round: 1, Mention: []string{"S0ONCALL"}}})
		errs[i] = err
		queued.Add(int64(len(got)))
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if queued.Load() != 1 {
		t.Fatalf("queued %d escalations, want 1", queued.Load())
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'thread_reply'`); n != 1 {
		t.Errorf("thread replies = %d, want 1", n)
	}
	if n := countKind(eventKinds(t, b, req.ID), "escalated"); n != 1 {
		t.Errorf("escalated events = %d, want 1", n)
	}
}

// PendingByTool counts each tool's pending requests and the start of the
// longest wait.
func testPendingByTool(t *testing.T, b *Backend) {
	ctx := context.Background()
	old := newRequest("wa_pending_old", "sha256:b")
	anHourAgo := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	old.Now = &anHourAgo
	insert(t, b, old)
	insertRequest(t, b, "wa_pending_new")
	other := newRequest("wa_pending_other", "sha256:b")
	other.Tool = "other"
	insert(t, b, other)
	done := insertRequest(t, b, "wa_pending_done")
	if _, _, ok, err := b.Decide(ctx, decide(done, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	counts, err := b.PendingByTool(ctx)
	if err != nil || len(counts) != 2 {
		t.Fatalf("PendingByTool = %+v, %v", counts, err)
	}
	if c := counts[1]; c.Tool != tool || c.Count != 2 || !c.Oldest.Equal(anHourAgo) || c.Now.Sub(c.Oldest) < time.Hour {
		t.Errorf("tool %s = %+v, want 2 pending since %v", tool, c, anHourAgo)
	}
	if c := counts[0]; c.Tool != "other" || c.Count != 1 {
		t.Errorf("tool other = %+v", c)
	}
}
