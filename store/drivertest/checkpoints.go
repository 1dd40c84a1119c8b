package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// ownerInsertChain writes, as the owner with the chain trigger out of the
// way, a request's chain of events at the times given, hashed as the
// database would have: how events of a past month come to be in a test.
func ownerInsertChain(t *testing.T, b *Backend, requestID string, firstID int64, times []time.Time) []store.AuditEvent {
	t.Helper()
	var chain []store.AuditEvent
	var stmts []string
	prev := ""
	for i, at := range times {
		e := store.AuditEvent{ID: firstID + int64(i), RequestID: requestID, Seq: i + 1, At: at.UTC().Truncate(time.Microsecond),
			Actor: "U1", Kind: "noted", Data: "{}", PrevHash: prev}
		e.Hash = store.EventHash(e)
		prev = e.Hash
		chain = append(chain, e)
		when := fmt.Sprintf("'%s'", e.At.Format(time.RFC3339Nano))
		if b.Name == "sqlite" {
			when = fmt.Sprint(e.At.UnixMicro())
		}
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (id, request_id, at, actor, kind, data, seq, prev_hash, hash)
VALUES (%d, '%s', %s, '%s', '%s', '%s', %d, '%s', '%s')`, e.ID, e.RequestID, when, e.Actor, e.Kind, e.Data, e.Seq, e.PrevHash, e.Hash))
	}
	ownerExec(t, b, stmts...)
	return chain
}

// ownerEditCheckpoints runs statements on the checkpoints as the owner,
// with their append-only triggers out of the way.
func ownerEditCheckpoints(t *testing.T, b *Backend, stmts ...string) {
	t.Helper()
	if b.Name == "sqlite" {
		stmts = append([]string{`DROP TRIGGER IF EXISTS audit_checkpoints_no_update`, `DROP TRIGGER IF EXISTS audit_checkpoint_heads_no_update`}, stmts...)
	} else {
		stmts = append([]string{`ALTER TABLE audit_checkpoints DISABLE TRIGGER USER`, `ALTER TABLE audit_checkpoint_heads DISABLE TRIGGER USER`}, stmts...)
		stmts = append(stmts, `ALTER TABLE audit_checkpoints ENABLE TRIGGER USER`, `ALTER TABLE audit_checkpoint_heads ENABLE TRIGGER USER`)
	}
	for _, stmt := range stmts {
		if err := b.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func testAuditMonthDroppedLeavesACheckpointThatVerifies(t *testing.T, b *Backend) {
	ctx := context.Background()
	if b.Name != "sqlite" {
		// The month of the old events has its partition, as a sweep then
		// would have created it.
		if err := b.Exec(`SELECT countersign_event_partition('2020-01-01 00:00:00+00')`); err != nil {
			t.Fatal(err)
		}
	}
	const (
		cut  = "aaaaaaaa-0000-0000-0000-000000000001" // events in the old month and now
		gone = "aaaaaaaa-0000-0000-0000-000000000002" // events in the old month only
	)
	old := time.Date(2020, 1, 10, 12, 0, 0, 0, time.UTC)
	now := time.Now()
	cutChain := ownerInsertChain(t, b, cut, 900001, []time.Time{old, old.Add(time.Hour), now, now})
	ownerInsertChain(t, b, gone, 900101, []time.Time{old, old.Add(time.Minute)})
	kept := insertRequest(t, b, "wa_checkpoint_kept") // events of this month only

	before := b.Count(t, `SELECT count(*) FROM events`)
	n, err := b.DropAudit(ctx, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || n != 1 {
		t.Fatalf("DropAudit = %d, %v; want the one old month", n, err)
	}
	if got := b.Count(t, `SELECT count(*) FROM events`); got != before-4 {
		t.Errorf("%d events after the drop, want %d", got, before-4)
	}
	if got := b.Count(t, `SELECT count(*) FROM audit_checkpoint_heads`); got != 2 {
		t.Errorf("%d checkpoint heads, want 2 (one per request chain cut)", got)
	}
	r := verify(t, b)
	if r.Bad != nil || r.BadCheckpoint != nil || r.Checkpoints != 1 || r.Resumed != 1 || r.Events != before-4 {
		t.Fatalf("after the drop: %+v; want intact, 1 checkpoint, 1 chain resumed, %d events", r, before-4)
	}
	if evs, err := b.EventsFor(ctx, kept.ID); err != nil || len(evs) == 0 {
		t.Errorf("events of the request of this month: %v, %v", evs, err)
	}
	// A request whose events all left chains on from its checkpoint head.
	if err := b.AppendEvent(ctx, store.Event{RequestID: gone, Actor: "U1", Kind: "noted"}); err != nil {
		t.Fatal(err)
	}
	if seqs, err := b.QueryStrings(fmt.Sprintf(`SELECT CAST(seq AS TEXT) FROM events WHERE request_id = '%s'`, gone)); err != nil || len(seqs) != 1 || seqs[0] != "3" {
		t.Errorf("the event after its request's chain was dropped has seq %v, %v; want 3", seqs, err)
	}
	if ids, err := b.QueryStrings(`SELECT CAST(count(*) AS TEXT) FROM events GROUP BY id HAVING count(*) > 1`); err != nil || len(ids) != 0 {
		t.Errorf("event ids given twice: %v, %v", ids, err)
	}
	before++
	if r := verify(t, b); r.Bad != nil || r.BadCheckpoint != nil || r.Resumed != 2 || r.Events != before-4 {
		t.Fatalf("after an event of a dropped chain: %+v; want intact, 2 chains resumed, %d events", r, before-4)
	}
	// Nothing this month goes, whatever the bound.
	if n, err := b.DropAudit(ctx, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 0 {
		t.Errorf("DropAudit again = %d, %v", n, err)
	}

	expectBadCheckpoint := func(what string) {
		t.Helper()
		r := verify(t, b)
		if r.BadCheckpoint == nil || r.BadCheckpoint.ID != 1 || !strings.Contains(r.Problem, "edited") {
			t.Errorf("%s: report %+v, want checkpoint 1 named as edited", what, r)
		}
	}
	ownerEditCheckpoints(t, b, `UPDATE audit_checkpoints SET events = events + 1`)
	expectBadCheckpoint("a checkpoint's count edited")
	ownerEditCheckpoints(t, b, `UPDATE audit_checkpoints SET events = events - 1`)
	ownerEditCheckpoints(t, b, fmt.Sprintf(`UPDATE audit_checkpoint_heads SET seq = 1 WHERE request_id = '%s'`, cut))
	expectBadCheckpoint("a checkpoint's head edited")
	ownerEditCheckpoints(t, b, fmt.Sprintf(`UPDATE audit_checkpoint_heads SET seq = 2 WHERE request_id = '%s'`, cut))
	if r := verify(t, b); r.Bad != nil || r.BadCheckpoint != nil {
		t.Fatalf("the edits put back: %+v", r)
	}

	// An event after the checkpoint edited, then the first one removed.
	ownerExec(t, b, fmt.Sprintf(`UPDATE events SET actor = 'U0CEO' WHERE id = %d`, cutChain[3].ID))
	if r := verify(t, b); r.Bad == nil || r.Bad.ID != cutChain[3].ID || !strings.Contains(r.Problem, "edited") {
		t.Errorf("an edited event after the checkpoint: %+v, want event %d named", r, cutChain[3].ID)
	}
	ownerExec(t, b, fmt.Sprintf(`DELETE FROM events WHERE id = %d`, cutChain[2].ID))
	if r := verify(t, b); r.Bad == nil || r.Bad.ID != cutChain[3].ID || !strings.Contains(r.Problem, "removed") {
		t.Errorf("the first event after the checkpoint deleted: %+v, want event %d named", r, cutChain[3].ID)
	}
}
