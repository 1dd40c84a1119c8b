package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
)

func testDecideFirstWriterWins(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_decide")
	const deciders = 16
	decided := make([]bool, deciders)
	errs := make([]error, deciders)
	Release(deciders, func(i int) {
		verdict := store.VerdictApprove
		if i%2 == 1 {
			verdict = store.VerdictReject
		}
		_, _, decided[i], errs[i] = b.Decide(ctx, decide(req, verdict, fmt.Sprintf("U%d", i)))
	})
	winner := -1
	for i := range deciders {
		if errs[i] != nil {
			t.Fatalf("decider %d: %v", i, errs[i])
		}
		if decided[i] {
			if winner >= 0 {
				t.Fatalf("deciders %d and %d both decided", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no decider won")
	}
	d, err := b.DecisionFor(ctx, req.ID, 1)
	if err != nil || d.DecidedBy != fmt.Sprintf("U%d", winner) {
		t.Fatalf("DecisionFor = %+v, %v; want decided by U%d", d, err, winner)
	}
	if n := b.Count(t, `SELECT count(*) FROM decisions`); n != 1 {
		t.Errorf("decisions = %d, want 1", n)
	}
	wantExecutions := 1 - winner%2 // even deciders approve
	if execs, err := b.ExecutionsFor(ctx, req.ID); err != nil || len(execs) != wantExecutions {
		t.Errorf("executions = %d, %v; want %d", len(execs), err, wantExecutions)
	}
	if kinds := eventKinds(t, b, req.ID); strings.Join(kinds, ",") != "requested,decided" {
		t.Errorf("events = %v", kinds)
	}
}

func testApproveCreatesReadyExecutionFromTheRequest(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, d := approved(t, b, "wa_approve")
	if req.Status != store.RequestApproved || d.Verdict != store.VerdictApprove || d.PayloadHashSeen != "sha256:p" {
		t.Fatalf("after approve: request %s, decision %+v", req.Status, d)
	}
	e, err := b.ExecutionForDecision(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if e.State != store.ExecReady || e.Key != req.Key || string(e.Snapshot) != string(req.Snapshot) ||
		e.SnapshotHash != req.PayloadHash || e.Attempts != 0 || e.MaxAttempts != 3 || e.RequestID != req.ID ||
		!e.ApprovedAt.Equal(d.DecidedAt) || !e.NextAttemptAt.Equal(d.DecidedAt) || e.ClaimedBy != nil {
		t.Errorf("execution = %+v", e)
	}
	if latest, err := b.LatestExecution(ctx, req.ID); err != nil || latest.ID != e.ID {
		t.Errorf("LatestExecution = %d, %v", latest.ID, err)
	}
	if latest, err := b.LatestDecision(ctx, req.ID); err != nil || latest.ID != d.ID {
		t.Errorf("LatestDecision = %d, %v", latest.ID, err)
	}
	if state, err := b.CardState(ctx, req.ID, 1); err != nil || state != "approved/ready/0" {
		t.Errorf("CardState = %q, %v", state, err)
	}
	// A later click changes nothing.
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictReject, "U2")); err != nil || ok {
		t.Errorf("second Decide = %v, %v", ok, err)
	}
	events, err := b.EventsFor(ctx, req.ID)
	if err != nil || len(events) != 2 || events[1].Actor != "U1" || events[1].Data["verdict"] != "approve" ||
		events[1].Data["round"] != float64(1) || !events[1].At.Equal(d.DecidedAt) {
		t.Errorf("events = %+v, %v", events, err)
	}
}

func testRejectCreatesNoExecution(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, d, ok, err := b.Decide(ctx, decide(insertRequest(t, b, "wa_reject"), store.VerdictReject, "U1"))
	if err != nil || !ok || req.Status != store.RequestRejected || d.Verdict != store.VerdictReject {
		t.Fatalf("Decide = %s %s, %v, %v", req.Status, d.Verdict, ok, err)
	}
	if _, err := b.LatestExecution(ctx, req.ID); err != store.ErrNotFound {
		t.Errorf("LatestExecution = %v, want ErrNotFound", err)
	}
	if execs, err := b.ExecutionsFor(ctx, req.ID); err != nil || len(execs) != 0 {
		t.Errorf("executions = %d, %v; want 0", len(execs), err)
	}
	if state, err := b.CardState(ctx, req.ID, 1); err != nil || state != "rejected" {
		t.Errorf("CardState = %q, %v", state, err)
	}
}

func testDecideRefusesStaleRoundOrHash(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_stale")
	wrongRound, wrongHash := decide(req, store.VerdictApprove, "U1"), decide(req, store.VerdictApprove, "U1")
	wrongRound.Round = 2
	wrongHash.PayloadHash = "sha256:other"
	for _, p := range []store.DecideParams{wrongRound, wrongHash} {
		if _, _, ok, err := b.Decide(ctx, p); err != nil || ok {
			t.Errorf("Decide(round %d, hash %s) = %v, %v; want not decided", p.Round, p.PayloadHash, ok, err)
		}
	}
	if _, err := b.DecisionFor(ctx, req.ID, 1); err != store.ErrNotFound {
		t.Errorf("DecisionFor = %v, want ErrNotFound", err)
	}
}
