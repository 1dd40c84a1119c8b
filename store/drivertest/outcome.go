package drivertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// An agent's outcome report settles its ready execution once: the same
// report again records nothing, another is ErrOutcomeConflict, and each
// settled move writes one event and queues the card update.
func testReportOutcomeOnce(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_outcome")
	p := store.OutcomeParams{Request: req, To: store.ExecSucceeded, ProviderRef: "po_1", Detail: "paid", Actor: "agent:agent"}
	for i, want := range []bool{true, false} {
		recorded, err := b.ReportOutcome(ctx, p)
		if err != nil || recorded != want {
			t.Fatalf("report %d: recorded %v, %v; want %v", i+1, recorded, err, want)
		}
	}
	e, err := b.LatestExecution(ctx, req.ID)
	if err != nil || e.State != store.ExecSucceeded || e.ProviderRef == nil || *e.ProviderRef != "po_1" {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	if n := countKind(eventKinds(t, b, req.ID), string(store.EventSucceeded)); n != 1 {
		t.Errorf("%d succeeded events, want 1", n)
	}
	for _, other := range []store.OutcomeParams{
		{Request: req, To: store.ExecFailed, Actor: "agent:agent"},
		{Request: req, To: store.ExecSucceeded, ProviderRef: "po_2", Actor: "agent:agent"},
	} {
		if _, err := b.ReportOutcome(ctx, other); !errors.Is(err, store.ErrOutcomeConflict) {
			t.Errorf("another report (%s, %q) = %v, want ErrOutcomeConflict", other.To, other.ProviderRef, err)
		}
	}
	pending := insertRequest(t, b, "wa_outcome_pending")
	if _, err := b.ReportOutcome(ctx, store.OutcomeParams{Request: pending, To: store.ExecSucceeded}); !errors.Is(err, store.ErrNoExecution) {
		t.Errorf("a report for a pending request = %v, want ErrNoExecution", err)
	}
}

// Concurrent identical reports record one outcome.
func testConcurrentReportsRecordOne(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_outcome_race")
	const n = 4
	results := make(chan error, n)
	recordedCount := make(chan bool, n)
	for range n {
		go func() {
			recorded, err := b.ReportOutcome(ctx, store.OutcomeParams{Request: req, To: store.ExecFailed, Detail: "declined", Actor: "agent:agent"})
			results <- err
			recordedCount <- recorded
		}()
	}
	recorded := 0
	for range n {
		if err := <-results; err != nil {
			t.Errorf("report: %v", err)
		}
		if <-recordedCount {
			recorded++
		}
	}
	if recorded != 1 {
		t.Errorf("%d reports recorded, want 1", recorded)
	}
	if k := countKind(eventKinds(t, b, req.ID), string(store.EventFailed)); k != 1 {
		t.Errorf("%d failed events, want 1", k)
	}
}

// An approved agent-executed write with no outcome after its timeout goes
// to needs_review; one approved since is left alone, and a late report
// still settles it.
func testOverdueOutcomesNeedReview(t *testing.T, b *Backend) {
	ctx := context.Background()
	old, _ := approved(t, b, "wa_overdue_old")
	now := time.Now()
	if moved, err := b.ExpireOutcomes(ctx, map[string]time.Duration{tool: time.Hour}, now, 10); err != nil || moved != 0 {
		t.Fatalf("ExpireOutcomes within the timeout = %d, %v; want 0", moved, err)
	}
	moved, err := b.ExpireOutcomes(ctx, map[string]time.Duration{tool: time.Hour}, now.Add(2*time.Hour), 10)
	if err != nil || moved != 1 {
		t.Fatalf("ExpireOutcomes past the timeout = %d, %v; want 1", moved, err)
	}
	e, err := b.LatestExecution(ctx, old.ID)
	if err != nil || e.State != store.ExecNeedsReview || e.LastCode == nil || *e.LastCode != store.CodeOutcomeTimeout {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	if n := countKind(eventKinds(t, b, old.ID), string(store.EventNeedsReview)); n != 1 {
		t.Errorf("%d needs_review events, want 1", n)
	}
	if moved, err := b.ExpireOutcomes(ctx, map[string]time.Duration{tool: time.Hour}, now.Add(2*time.Hour), 10); err != nil || moved != 0 {
		t.Errorf("ExpireOutcomes again = %d, %v; want 0", moved, err)
	}
	if recorded, err := b.ReportOutcome(ctx, store.OutcomeParams{Request: old, To: store.ExecSucceeded, Actor: "agent:agent"}); err != nil || !recorded {
		t.Errorf("a late report = %v, %v", recorded, err)
	}
	if r := verify(t, b); r.Bad != nil || r.BadCheckpoint != nil {
		t.Errorf("the audit trail does not verify: %s", r.Problem)
	}
}
