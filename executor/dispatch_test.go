package executor_test

import (
	"slices"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

func TestDispatchSendsTheApprovedBytesOnce(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		req := b.approve(t)

		if n := b.dispatch(t); n != 1 {
			t.Fatalf("claimed %d, want 1", n)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
		obj := b.provider.AllObjects()[0]
		if string(obj.Body) != string(req.Snapshot) {
			t.Fatalf("provider got %s, want the snapshot %s", obj.Body, req.Snapshot)
		}
		if obj.RequestID != req.ID {
			t.Fatalf("Countersign-Request-Id %q, want %q", obj.RequestID, req.ID)
		}
		if b.provider.BadSignatures() != 0 {
			t.Fatal("the provider saw a bad signature")
		}
		if e.Attempts != 1 || e.ProviderRef == nil || *e.ProviderRef != obj.ID || e.ResponseStatus == nil || *e.ResponseStatus != 201 {
			t.Fatalf("execution recorded attempts=%d ref=%v status=%v", e.Attempts, e.ProviderRef, e.ResponseStatus)
		}
		if got := eventKinds(t, b.db, req.ID); !slices.Equal(got, []string{"requested", "voted", "decided", "claimed", "succeeded"}) {
			t.Fatalf("events %v", got)
		}
		// The approval's card update still waits: the claim's and the
		// outcome's join it (it draws the card as it is when sent).
		if got := outboxRows(t, b.db, req.ID); !slices.Equal(got, []string{"post_card/1", "update_card/1"}) {
			t.Fatalf("outbox %v", got)
		}
		// Nothing more to do: a second pass claims nothing and sends nothing.
		if n := b.dispatch(t); n != 0 {
			t.Fatalf("second pass claimed %d", n)
		}
		wantObjects(t, b.provider, req.Key, 1)
	})
}

func TestDispatchRefusesASnapshotThatDoesNotMatchTheApprovedHash(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d})
		req := b.approve(t)
		// Someone changes the bytes after approval.
		tampered := []byte(`{"amount_cents":999999,"currency":"USD","invoice":"inv_8841"}`)
		if err := b.db.Exec(`UPDATE executions SET snapshot = $1 WHERE request_id = $2`, tampered, req.ID); err != nil {
			t.Fatal(err)
		}
		b.dispatch(t)
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecNeedsReview)
		if *e.LastCode != "snapshot_mismatch" {
			t.Fatalf("code %q", *e.LastCode)
		}
		if b.provider.Received() != 0 {
			t.Fatal("a tampered snapshot was sent")
		}
		if got := outboxRows(t, b.db, req.ID); !slices.Contains(got, "thread_reply/1/needs_review") {
			t.Fatalf("no needs_review reply in %v", got)
		}
	})
}
