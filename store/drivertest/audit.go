package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// verify runs VerifyAudit and returns its report, failing on an error.
func verify(t *testing.T, b *Backend) store.AuditReport {
	t.Helper()
	r, err := b.VerifyAudit(context.Background())
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	return r
}

// ownerExec runs statements as the schema's owner, with the append-only
// triggers out of the way, as someone who owns the database could.
func ownerExec(t *testing.T, b *Backend, stmts ...string) {
	t.Helper()
	if b.Name == "sqlite" {
		stmts = append([]string{`DROP TRIGGER IF EXISTS events_no_update`, `DROP TRIGGER IF EXISTS events_no_delete`}, stmts...)
	} else {
		stmts = append([]string{`ALTER TABLE events DISABLE TRIGGER USER`}, stmts...)
		stmts = append(stmts, `ALTER TABLE events ENABLE TRIGGER USER`)
	}
	for _, stmt := range stmts {
		if err := b.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// chainOf returns the ids of a request's events in chain order.
func chainOf(t *testing.T, b *Backend, requestID string) []int {
	t.Helper()
	ids, err := b.QueryStrings(fmt.Sprintf(`SELECT CAST(id AS TEXT) FROM events WHERE request_id = '%s' ORDER BY seq`, requestID))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		fmt.Sscan(id, &out[i])
	}
	return out
}

func testAuditChainVerifiesAndNamesTheFirstBadEvent(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := settledRequest(t, b, "wa_audit", "succeeded") // requested, vote, decided, claimed, succeeded, …
	other := insertRequest(t, b, "wa_audit_other")
	if err := b.AppendEvent(ctx, store.Event{RequestID: other.ID, Actor: "U1", Kind: "noted"}); err != nil {
		t.Fatal(err)
	}
	total := b.Count(t, `SELECT count(*) FROM events`)
	if r := verify(t, b); r.Bad != nil || r.Events != total || r.Requests != 2 {
		t.Fatalf("an intact audit = %+v, want %d events of 2 requests", r, total)
	}
	ids := chainOf(t, b, req.ID)
	if len(ids) < 4 {
		t.Fatalf("chain of %d events", len(ids))
	}
	expectBad := func(what string, id int, problem string) {
		t.Helper()
		r := verify(t, b)
		if r.Bad == nil || r.Bad.ID != int64(id) || !strings.Contains(r.Problem, problem) {
			t.Errorf("%s: report %+v, want event %d named (%s)", what, r, id, problem)
		}
	}

	// Edited, then put back.
	actor, err := b.QueryStrings(fmt.Sprintf(`SELECT actor FROM events WHERE id = %d`, ids[1]))
	if err != nil || len(actor) != 1 {
		t.Fatal(actor, err)
	}
	ownerExec(t, b, fmt.Sprintf(`UPDATE events SET actor = 'U0CEO' WHERE id = %d`, ids[1]))
	expectBad("an edited actor", ids[1], "edited")
	ownerExec(t, b, fmt.Sprintf(`UPDATE events SET actor = '%s' WHERE id = %d`, actor[0], ids[1]))
	if r := verify(t, b); r.Bad != nil {
		t.Fatalf("the edit put back: %+v", r)
	}

	// Reordered (two events swap places), then put back.
	seqs := map[int]int{}
	for i, id := range ids {
		seqs[id] = i + 1
	}
	ownerExec(t, b,
		fmt.Sprintf(`UPDATE events SET seq = -1 WHERE id = %d`, ids[2]),
		fmt.Sprintf(`UPDATE events SET seq = %d WHERE id = %d`, seqs[ids[2]], ids[3]),
		fmt.Sprintf(`UPDATE events SET seq = %d WHERE id = %d`, seqs[ids[3]], ids[2]),
	)
	expectBad("two events swapped", ids[3], "moved")
	ownerExec(t, b,
		fmt.Sprintf(`UPDATE events SET seq = -1 WHERE id = %d`, ids[3]),
		fmt.Sprintf(`UPDATE events SET seq = %d WHERE id = %d`, seqs[ids[2]], ids[2]),
		fmt.Sprintf(`UPDATE events SET seq = %d WHERE id = %d`, seqs[ids[3]], ids[3]),
	)
	if r := verify(t, b); r.Bad != nil {
		t.Fatalf("the swap put back: %+v", r)
	}

	// Deleted: the event after the gap is named.
	ownerExec(t, b, fmt.Sprintf(`DELETE FROM events WHERE id = %d`, ids[1]))
	expectBad("a deleted event", ids[2], "removed")

	if b.Name != "sqlite" {
		// The database sets the time: an event cannot be backdated.
		backdated := time.Now().Add(-24 * time.Hour)
		if err := b.AppendEvent(ctx, store.Event{RequestID: other.ID, At: backdated, Actor: "U0CEO", Kind: "decided"}); err != nil {
			t.Fatal(err)
		}
		events, err := b.EventsFor(ctx, other.ID)
		if err != nil || len(events) == 0 || events[len(events)-1].At.Before(time.Now().Add(-time.Hour)) {
			t.Errorf("a backdated event was stored at %v, %v", events[len(events)-1].At, err)
		}
	}
}
