package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// anchor takes an anchor of b's audit trail and returns it with its heads.
func anchor(t *testing.T, b *Backend) (store.AuditAnchor, []store.AuditHead) {
	t.Helper()
	var heads []store.AuditHead
	a, r, err := b.AnchorAudit(context.Background(), func(h store.AuditHead) error {
		heads = append(heads, h)
		return nil
	})
	if err != nil || r.Bad != nil || r.BadCheckpoint != nil {
		t.Fatalf("AnchorAudit = %+v, %v", r, err)
	}
	return a, heads
}

// verifyAnchor runs VerifyAuditAnchor against heads and fails on an error.
func verifyAnchor(t *testing.T, b *Backend, cp store.CheckpointRef, heads []store.AuditHead) store.AuditReport {
	t.Helper()
	i := 0
	r, err := b.VerifyAuditAnchor(context.Background(), store.Anchor{Checkpoint: cp, Next: func() (store.AuditHead, bool, error) {
		if i == len(heads) {
			return store.AuditHead{}, false, nil
		}
		i++
		return heads[i-1], true, nil
	}})
	if err != nil {
		t.Fatalf("VerifyAuditAnchor: %v", err)
	}
	if i != len(heads) && r.Bad == nil && r.BadCheckpoint == nil {
		t.Errorf("VerifyAuditAnchor read %d of the anchor's %d heads", i, len(heads))
	}
	return r
}

// ownerRechain computes the chain of a request's events again from its
// first, as an owner who edited one would, so that it verifies.
func ownerRechain(t *testing.T, b *Backend, requestID string) {
	t.Helper()
	events, err := b.AuditChain(context.Background(), store.AuditCursor{RequestID: requestID}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	prev := ""
	for _, e := range events {
		if e.RequestID != requestID {
			break
		}
		e.PrevHash = prev
		e.Hash = store.EventHash(e)
		prev = e.Hash
		stmts = append(stmts, fmt.Sprintf(`UPDATE events SET prev_hash = '%s', hash = '%s' WHERE id = %d`, e.PrevHash, e.Hash, e.ID))
	}
	ownerExec(t, b, stmts...)
}

// mismatchOf returns the report's mismatch of the request, if any.
func mismatchOf(r store.AuditReport, requestID string) (store.AnchorMismatch, bool) {
	for _, m := range r.AnchorMismatches {
		if m.Head.RequestID == requestID {
			return m, true
		}
	}
	return store.AnchorMismatch{}, false
}

// An anchor holds every request's chain head and a digest over them; held
// to it, the trail names each request whose chain was computed again after
// an edit, lost its last events or all of them, all of which VerifyAudit
// alone lets through, and lets through events written since and months
// dropped since with their checkpoint.
func testAuditAnchorNamesRequestsChangedSince(t *testing.T, b *Backend) {
	ctx := context.Background()
	if b.Name != "sqlite" {
		if err := b.Exec(`SELECT countersign_event_partition('2020-01-01 00:00:00+00')`); err != nil {
			t.Fatal(err)
		}
	}
	edited := settledRequest(t, b, "wa_anchor_edited", "succeeded")
	cut := settledRequest(t, b, "wa_anchor_cut", "succeeded")
	gone := insertRequest(t, b, "wa_anchor_gone")
	grows := insertRequest(t, b, "wa_anchor_grows")
	const old = "aaaaaaaa-0000-0000-0000-0000000000a1" // events of an old month only, dropped after the anchor
	jan := time.Date(2020, 1, 10, 12, 0, 0, 0, time.UTC)
	ownerInsertChain(t, b, old, 900201, []time.Time{jan, jan.Add(time.Hour)})

	a, heads := anchor(t, b)
	total := b.Count(t, `SELECT count(*) FROM events`)
	if a.Requests != 5 || len(heads) != 5 || a.Events != total || a.Checkpoint.ID != 0 {
		t.Fatalf("anchor = %+v with %d heads; want 5 requests, %d events, no checkpoint", a, len(heads), total)
	}
	d := store.NewAnchorDigest()
	for i, h := range heads {
		if i > 0 && h.RequestID <= heads[i-1].RequestID {
			t.Errorf("heads out of request id order: %v", heads)
		}
		d.Add(h)
	}
	if got := d.Sum(store.CheckpointRef{}); got != a.Digest {
		t.Errorf("digest of the heads = %s, anchor says %s", got, a.Digest)
	}
	if r := verifyAnchor(t, b, a.Checkpoint, heads); r.Anchored != 5 || r.AnchorMismatchCount != 0 || r.AnchorCheckpoint != "" {
		t.Fatalf("the trail as anchored: %+v", r)
	}

	// Since the anchor: events written, a month dropped with its checkpoint.
	if err := b.AppendEvent(ctx, store.Event{RequestID: grows.ID, Actor: "U1", Kind: "noted"}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.DropAudit(ctx, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 1 {
		t.Fatalf("DropAudit = %d, %v", n, err)
	}
	if r := verifyAnchor(t, b, a.Checkpoint, heads); r.Anchored != 4 || r.AnchorDropped != 1 || r.AnchorMismatchCount != 0 {
		t.Fatalf("after events written and a month dropped since the anchor: %+v; want 4 found, 1 dropped", r)
	}

	// An event edited and its chain computed again; a chain's last two
	// events deleted; a chain's every event deleted. The chains verify.
	ownerExec(t, b, fmt.Sprintf(`UPDATE events SET actor = 'U0CEO' WHERE request_id = '%s' AND seq = 2`, edited.ID))
	ownerRechain(t, b, edited.ID)
	cutHead := b.Count(t, fmt.Sprintf(`SELECT max(seq) FROM events WHERE request_id = '%s'`, cut.ID))
	ownerExec(t, b, fmt.Sprintf(`DELETE FROM events WHERE request_id = '%s' AND seq >= %d`, cut.ID, cutHead-1))
	ownerExec(t, b, fmt.Sprintf(`DELETE FROM events WHERE request_id = '%s'`, gone.ID))
	if r := verify(t, b); r.Bad != nil || r.BadCheckpoint != nil {
		t.Fatalf("VerifyAudit alone names %+v; the tampers were meant to pass it", r)
	}
	r := verifyAnchor(t, b, a.Checkpoint, heads)
	if r.AnchorMismatchCount != 3 || len(r.AnchorMismatches) != 3 || r.Anchored != 1 || r.AnchorDropped != 1 {
		t.Errorf("held to the anchor after three tampers: %+v; want 3 requests named, 1 found, 1 dropped", r)
	}
	for _, want := range []struct{ id, problem string }{
		{edited.ID, "changed and the chain computed again"},
		{cut.ID, fmt.Sprintf("its chain ends at number %d, where the anchor holds number %d: its last events were removed", cutHead-2, cutHead)},
		{gone.ID, "none of its events is left"},
	} {
		if m, ok := mismatchOf(r, want.id); !ok || !strings.Contains(m.Problem, want.problem) {
			t.Errorf("request %s: %+v (found %v), want it named: %s", want.id, m, ok, want.problem)
		}
	}

	// An anchor taken now names the checkpoint; that checkpoint edited and
	// its hash computed again is named.
	a2, heads2 := anchor(t, b)
	if a2.Checkpoint.ID != 1 || a2.Requests != 3 {
		t.Fatalf("anchor after the drop = %+v; want checkpoint 1 and 3 requests", a2)
	}
	if r := verifyAnchor(t, b, a2.Checkpoint, heads2); r.Anchored != 3 || r.AnchorMismatchCount != 0 || r.AnchorCheckpoint != "" {
		t.Fatalf("the trail as anchored the second time: %+v", r)
	}
	cps, err := b.AuditCheckpoints(ctx)
	if err != nil || len(cps) != 1 {
		t.Fatal(cps, err)
	}
	c := cps[0]
	c.DroppedBy = "nobody"
	hd := store.NewHeadsDigest()
	hs, err := b.CheckpointHeads(ctx, c.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		hd.Add(h)
	}
	ownerEditCheckpoints(t, b, fmt.Sprintf(`UPDATE audit_checkpoints SET dropped_by = 'nobody', hash = '%s' WHERE id = %d`,
		store.CheckpointHash(c, hd.Sum()), c.ID))
	if r := verify(t, b); r.BadCheckpoint != nil {
		t.Fatalf("VerifyAudit alone names %+v; the checkpoint computed again was meant to pass it", r)
	}
	if r := verifyAnchor(t, b, a2.Checkpoint, heads2); !strings.Contains(r.AnchorCheckpoint, "checkpoint 1 has hash") {
		t.Errorf("held to the anchor after its checkpoint was computed again: %+v", r)
	}
}
