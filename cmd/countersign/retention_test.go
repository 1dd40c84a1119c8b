package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// The sweep drops whole months of audit events older than the audit
// window, each leaving a checkpoint the verification then holds to; the
// verifier reports the last verified point and a broken chain.
func TestRetentionSweepDropsAuditMonthsAndTheVerifierReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := drivertest.SQLite.Open(t, true)
	req, _, err := b.InsertRequest(ctx, store.NewRequest{Key: "wa_sweep_audit", BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`),
		Tool: "t", Snapshot: []byte(`{}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: "U1", Kind: "noted"}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	verifier := newAuditVerifier(b, slog.New(slog.DiscardHandler), reg)
	if err := verifier.runOnce(ctx); err != nil || testutil.ToFloat64(verifier.intact) != 1 || testutil.ToFloat64(verifier.verified) < 1 ||
		testutil.ToFloat64(verifier.at) == 0 {
		t.Fatalf("verifier on an intact trail: %v, intact %v, verified %v", err, testutil.ToFloat64(verifier.intact), testutil.ToFloat64(verifier.verified))
	}

	sweep := newRetentionSweep(b, 0, 24*time.Hour, slog.New(slog.DiscardHandler), reg)
	if _, err := sweep.runOnce(ctx); err != nil || testutil.ToFloat64(sweep.monthsPruned) != 0 {
		t.Fatalf("a sweep within the audit window dropped %v months, %v", testutil.ToFloat64(sweep.monthsPruned), err)
	}
	sweep.now = func() time.Time { return time.Now().AddDate(0, 3, 0) }
	if _, err := sweep.runOnce(ctx); err != nil || testutil.ToFloat64(sweep.monthsPruned) != 1 {
		t.Fatalf("a sweep past the audit window dropped %v months, %v; want this month", testutil.ToFloat64(sweep.monthsPruned), err)
	}
	if n := b.Count(t, `SELECT count(*) FROM events`); n != 0 {
		t.Errorf("%d events after their month was dropped", n)
	}
	if r, err := b.VerifyAudit(ctx); err != nil || r.Bad != nil || r.BadCheckpoint != nil || r.Checkpoints != 1 {
		t.Errorf("VerifyAudit after the drop = %+v, %v", r, err)
	}

	if err := b.Exec(`DROP TRIGGER audit_checkpoints_no_update`); err != nil {
		t.Fatal(err)
	}
	if err := b.Exec(`UPDATE audit_checkpoints SET events = 0`); err != nil {
		t.Fatal(err)
	}
	if err := verifier.runOnce(ctx); err != nil || testutil.ToFloat64(verifier.intact) != 0 {
		t.Errorf("verifier after a checkpoint was edited: %v, intact %v", err, testutil.ToFloat64(verifier.intact))
	}
}

// The sweep prunes what settled before its window and counts it.
func TestRetentionSweepPrunesWhatTheWindowLetsGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := drivertest.SQLite.Open(t, true)
	req, _, err := b.InsertRequest(ctx, store.NewRequest{Key: "wa_sweep", BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`),
		Tool: "t", Snapshot: []byte(`{}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := b.CancelRequest(ctx, req.ID, store.AgentActor("agent"), nil); err != nil || !ok {
		t.Fatalf("cancel: %v, %v", ok, err)
	}
	pending, _, err := b.InsertRequest(ctx, store.NewRequest{Key: "wa_sweep_pending", BasisHash: "sha256:b", RunID: "r", Step: []byte(`2`),
		Tool: "t", Snapshot: []byte(`{}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	sweep := newRetentionSweep(b, time.Hour, 0, slog.New(slog.DiscardHandler), prometheus.NewRegistry())

	if n, err := sweep.runOnce(ctx); err != nil || n != 0 {
		t.Fatalf("a sweep within the window pruned %d, %v", n, err)
	}
	sweep.now = func() time.Time { return time.Now().Add(time.Hour + time.Minute) }
	if n, err := sweep.runOnce(ctx); err != nil || n != 1 {
		t.Fatalf("a sweep past the window pruned %d, %v; want the cancelled request", n, err)
	}
	if got := testutil.ToFloat64(sweep.pruned); got != 1 {
		t.Errorf("countersign_requests_pruned_total = %v", got)
	}
	if _, err := b.RequestByID(ctx, req.ID); err == nil {
		t.Error("the cancelled request is still there")
	}
	if _, err := b.RequestByID(ctx, pending.ID); err != nil {
		t.Errorf("the pending request: %v", err)
	}
}
