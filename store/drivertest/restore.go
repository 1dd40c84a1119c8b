package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// A restore flags every unsettled execution, and the executions inserted
// later for the requests created before its guard ends; nothing settled,
// and nothing created after the guard. A human's resend clears the flag.
func testRestoreFlagsWhatTheCopyMayHaveForgotten(t *testing.T, b *Backend) {
	ctx := context.Background()
	flagged := func(requestID string) bool {
		t.Helper()
		e, err := b.LatestExecution(ctx, requestID)
		if err != nil {
			t.Fatalf("LatestExecution: %v", err)
		}
		return e.VerifyFirst
	}
	done, _ := approved(t, b, "wa_restore_done")
	c := claimOne(t, b, "w")
	if _, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"},
		[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecSucceeded}}); err != nil {
		t.Fatal(err)
	}
	ready, _ := approved(t, b, "wa_restore_ready")
	if flagged(ready.ID) {
		t.Fatal("an execution is flagged before any restore")
	}
	pending := insertRequest(t, b, "wa_restore_pending")

	if b.Name == "postgres-app-role" {
		// Only the schema's owner marks a restore (countersign restore
		// --postgres); serve's role reads the marks.
		if _, err := b.MarkRestored(ctx, store.RestoreParams{Source: "copy.db"}); err == nil {
			t.Error("the runtime role marked a restore")
		}
		if b.Count(t, "SELECT count(*) FROM restores") != 0 {
			t.Error("a restore was recorded")
		}
		return
	}
	// A restore without a window guards what is in the copy only.
	r, err := b.MarkRestored(ctx, store.RestoreParams{Source: "copy.db"})
	if err != nil {
		t.Fatalf("MarkRestored: %v", err)
	}
	if r.ID == 0 || r.Flagged != 1 || r.RestoredAt.IsZero() || !r.GuardUntil.Equal(r.RestoredAt) {
		t.Errorf("restore = %+v, want 1 flagged, guarded until it was restored", r)
	}
	if n := b.Count(t, "SELECT count(*) FROM restores WHERE source = 'copy.db'"); n != 1 {
		t.Errorf("restores recorded: %d, want 1", n)
	}
	if !flagged(ready.ID) || flagged(done.ID) {
		t.Errorf("after the restore: the ready execution flagged %v (want true), the settled one %v (want false)", flagged(ready.ID), flagged(done.ID))
	}
	// The request pending in the copy verifies first once approved; one
	// created after the guard is sent as usual.
	if _, _, ok, err := b.Decide(ctx, decide(pending, store.VerdictApprove, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	later, _ := approved(t, b, "wa_restore_later")
	if !flagged(pending.ID) || flagged(later.ID) {
		t.Errorf("flagged: pending in the copy %v (want true), created after the guard %v (want false)", flagged(pending.ID), flagged(later.ID))
	}

	// With a window, a request created within it (an agent replaying an
	// intent the copy lost) verifies first too.
	r, err = b.MarkRestored(ctx, store.RestoreParams{Source: "again.db", Window: time.Hour})
	if err != nil {
		t.Fatalf("MarkRestored: %v", err)
	}
	if r.Flagged != 3 || r.GuardUntil.Sub(r.RestoredAt) != time.Hour {
		t.Errorf("second restore = %+v, want 3 flagged, guarded an hour", r)
	}
	replayed, _ := approved(t, b, "wa_restore_replayed")
	if !flagged(replayed.ID) {
		t.Error("a request created within the window is not flagged")
	}

	// A human who has it resent has looked: the flag goes.
	c = toNeedsReviewOf(t, b, ready.ID)
	if !flagged(ready.ID) {
		t.Fatal("needs_review dropped the flag")
	}
	if ok, err := b.Resolve(ctx, store.ResolveParams{RequestID: ready.ID, ExecutionID: c.ID, To: store.ExecReady, Action: "resend", By: "U9"}); err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	if flagged(ready.ID) {
		t.Error("a resend resolved by a human still verifies first")
	}
}

// toNeedsReviewOf claims the ready executions and moves requestID's to
// needs_review, putting the others back.
func toNeedsReviewOf(t *testing.T, s store.Store, requestID string) store.Claim {
	t.Helper()
	ctx := context.Background()
	claims, err := s.ClaimExecutions(ctx, claimParams("r", 50))
	if err != nil {
		t.Fatal(err)
	}
	var mine store.Claim
	var ts []store.Transition
	for _, c := range claims {
		to := store.ExecReady
		if c.RequestID == requestID {
			mine, to = c, store.ExecNeedsReview
		}
		ts = append(ts, store.Transition{ExecutionID: c.ID, Attempt: c.Attempts, To: to})
	}
	if mine.ID == 0 {
		t.Fatalf("no ready execution of %s to claim", requestID)
	}
	if _, err := s.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "r", Actor: "executor:r"}, ts); err != nil {
		t.Fatal(err)
	}
	return mine
}
