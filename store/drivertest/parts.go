package drivertest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/countersign/countersign/store"
)

// testPartsAndHistoryAreTheSingleReads checks PartsOf and HistoryOf answer,
// for requests in every state a representation shows, what the one-row
// reads answer for each request alone.
func testPartsAndHistoryAreTheSingleReads(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	plain := insertRequest(t, b, "wa_parts_plain")
	quorum := insertWithPolicy(t, b, "wa_parts_quorum", 2)
	vote(t, b, quorum, store.VerdictApprove, "U1", "looks right")
	rejected := insertRequest(t, b, "wa_parts_rejected")
	if _, _, ok, err := b.Decide(ctx, decide(rejected, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	executed, _ := approved(t, b, "wa_parts_executed")
	toNeedsReview(t, b)
	reqs := []store.Request{}
	for _, r := range []store.Request{plain, quorum, rejected, executed, quorum} { // quorum twice: in order, each
		reqs = append(reqs, must(b.RequestByID(ctx, r.ID)))
	}

	parts, err := b.PartsOf(ctx, reqs)
	if err != nil || len(parts) != len(reqs) {
		t.Fatalf("PartsOf = %d parts, %v; want %d", len(parts), err, len(reqs))
	}
	for i, r := range reqs {
		want := store.RequestParts{Votes: must(b.VotesFor(ctx, r.ID, r.Round))}
		want.Decision = orNil(b.LatestDecision(ctx, r.ID))
		want.Execution = orNil(b.LatestExecution(ctx, r.ID))
		want.Callback = orNil(b.LatestCallback(ctx, r.ID))
		if len(want.Votes) == 0 {
			want.Votes = nil
		}
		if !reflect.DeepEqual(parts[i], want) {
			t.Errorf("PartsOf(%s) = %+v, want %+v", r.Key, parts[i], want)
		}
	}
	// What the setup wrote is there to compare: not every part is empty.
	if len(parts[1].Votes) != 1 || parts[2].Decision == nil || parts[3].Execution == nil ||
		parts[3].Execution.State != store.ExecNeedsReview || parts[3].Callback == nil ||
		parts[0].Votes != nil || parts[0].Decision != nil || parts[0].Execution != nil || parts[0].Callback != nil {
		t.Errorf("PartsOf = %+v", parts)
	}
	if none, err := b.PartsOf(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("PartsOf(nil) = %v, %v", none, err)
	}

	for _, r := range reqs {
		h, err := b.HistoryOf(ctx, r.ID)
		if err != nil {
			t.Fatalf("HistoryOf(%s) = %v", r.Key, err)
		}
		want := store.History{Decision: orNil(b.LatestDecision(ctx, r.ID)),
			Executions: must(b.ExecutionsFor(ctx, r.ID)), Events: must(b.EventsFor(ctx, r.ID))}
		if len(want.Executions) == 0 {
			want.Executions = nil
		}
		if len(want.Events) == 0 {
			want.Events = nil
		}
		if !reflect.DeepEqual(h, want) {
			t.Errorf("HistoryOf(%s) = %+v, want %+v", r.Key, h, want)
		}
		if len(h.Events) == 0 {
			t.Errorf("HistoryOf(%s) has no events", r.Key)
		}
	}
	if h, err := b.HistoryOf(ctx, "00000000-0000-4000-8000-000000000000"); err != nil || h.Decision != nil || h.Executions != nil || h.Events != nil {
		t.Errorf("HistoryOf(no such request) = %+v, %v", h, err)
	}
}

// orNil returns a read of one row as a pointer, nil when there is none.
func orNil[T any](v T, err error) *T {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	v = must(v, err)
	return &v
}
