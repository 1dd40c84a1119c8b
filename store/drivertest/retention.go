package drivertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// personal is a value inside an effect that must leave with the request.
const personal = "pat@example.com"

// settledRequest inserts a request whose effect holds personal data and
// settles it: "rejected", "cancelled" or "succeeded" (approved, then its
// execution succeeded).
func settledRequest(t *testing.T, b *Backend, key, outcome string) store.Request {
	t.Helper()
	ctx := context.Background()
	p := newRequest(key, "sha256:b")
	p.Snapshot = []byte(`{"email":"` + personal + `"}`)
	p.Summary = "refund " + personal
	req := insert(t, b, p)
	switch outcome {
	case "rejected":
		if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictReject, "U1")); err != nil || !ok {
			t.Fatalf("reject %s: %v, %v", key, ok, err)
		}
	case "cancelled":
		if _, ok, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
			t.Fatalf("cancel %s: %v, %v", key, ok, err)
		}
	case "succeeded":
		if res := vote(t, b, req, store.VerdictApprove, "U1", ""); !res.Decided {
			t.Fatalf("approve %s: %+v", key, res)
		}
		c := claimOne(t, b, "w")
		applied, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"},
			[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecSucceeded, Status: 200,
				Body: []byte(`{"to":"` + personal + `"}`)}})
		if err != nil || len(applied) != 1 {
			t.Fatalf("succeed %s: %v, %v", key, applied, err)
		}
	default:
		t.Fatalf("no outcome %q", outcome)
	}
	return req
}

// rowsOf counts, table by table, the rows that reference request id (the
// request itself in requests).
func rowsOf(t *testing.T, b *Backend, id string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"decisions", "votes", "executions", "outbox", "callbacks", "cards", "events"} {
		out[table] = b.Count(t, fmt.Sprintf(`SELECT count(*) FROM %s WHERE request_id = '%s'`, table, id))
	}
	out["requests"] = b.Count(t, fmt.Sprintf(`SELECT count(*) FROM requests WHERE id = '%s'`, id))
	return out
}

func testPruneLeavesTombstonesAndNeverRunsAKeyTwice(t *testing.T, b *Backend) {
	ctx := context.Background()
	rejected := settledRequest(t, b, "wa_prune_rejected", "rejected")
	succeeded := settledRequest(t, b, "wa_prune_succeeded", "succeeded")
	pending := insertRequest(t, b, "wa_prune_pending")
	inFlight, _ := approved(t, b, "wa_prune_in_flight") // approved, its execution ready: not settled
	before := rowsOf(t, b, succeeded.ID)
	if before["requests"] != 1 || before["decisions"] != 1 || before["votes"] != 1 || before["executions"] != 1 ||
		before["outbox"] < 2 || before["events"] < 4 {
		t.Fatalf("rows of the succeeded request before the prune: %v", before)
	}
	// A request that settles after the window's end stays.
	cutoff := time.Now().Add(time.Minute)
	recent := insertRequest(t, b, "wa_prune_recent")
	later := cutoff.Add(time.Minute)
	if _, ok, err := b.CancelRequest(ctx, recent.ID, "agent:agent", &later); err != nil || !ok {
		t.Fatalf("cancel: %v, %v", ok, err)
	}

	n, err := b.Prune(ctx, store.PruneParams{Before: cutoff, BatchSize: 1})
	if err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want the 2 settled requests", n, err)
	}
	for _, req := range []store.Request{rejected, succeeded} {
		rows := rowsOf(t, b, req.ID)
		for table, count := range rows {
			if table != "events" && count != 0 {
				t.Errorf("%s: %d rows left in %s", req.Key, count, table)
			}
		}
		// The audit trail stays, and holds none of the effect's values.
		events, err := b.EventsFor(ctx, req.ID)
		if err != nil || len(events) == 0 || len(events) != before["events"] && req.ID == succeeded.ID {
			t.Errorf("%s: events after the prune = %d, %v", req.Key, len(events), err)
		}
		raw, _ := json.Marshal(events)
		if strings.Contains(string(raw), personal) {
			t.Errorf("%s: an event holds the effect's value: %s", req.Key, raw)
		}
	}
	if got := b.Count(t, `SELECT count(*) FROM requests WHERE key IN ('wa_prune_pending', 'wa_prune_in_flight', 'wa_prune_recent')`); got != 3 {
		t.Errorf("%d of the pending, in-flight and recent requests left, want 3", got)
	}
	for _, req := range []store.Request{pending, inFlight} {
		if rows := rowsOf(t, b, req.ID); rows["requests"] != 1 || rows["outbox"] == 0 {
			t.Errorf("%s lost rows: %v", req.Key, rows)
		}
	}
	if got := b.Count(t, `SELECT count(*) FROM tombstones`); got != 2 {
		t.Errorf("%d tombstones, want 2", got)
	}
	if got := b.Count(t, `SELECT count(*) FROM tombstones WHERE basis_hash LIKE '%`+personal+`%' OR status LIKE '%@%'`); got != 0 {
		t.Errorf("a tombstone holds the effect's value")
	}

	tombs, err := b.Tombstones(ctx, []string{rejected.Key, succeeded.Key, pending.Key})
	if err != nil || len(tombs) != 2 {
		t.Fatalf("Tombstones = %+v, %v", tombs, err)
	}
	ts := tombs[succeeded.Key]
	if ts.Status != string(store.ExecSucceeded) || ts.BasisHash != "sha256:b" || ts.Agent != "agent" ||
		ts.SettledAt.Before(succeeded.CreatedAt) || ts.SettledAt.After(cutoff) || ts.PrunedAt.Before(ts.SettledAt) {
		t.Errorf("tombstone of the succeeded request = %+v", ts)
	}
	if s := tombs[rejected.Key].Status; s != string(store.RequestRejected) {
		t.Errorf("tombstone of the rejected request has status %q", s)
	}

	// A replay, with the same basis or another, finds the tombstone by
	// every way in, and stores nothing.
	again := newRequest(succeeded.Key, "sha256:b")
	other := newRequest(rejected.Key, "sha256:other")
	results, err := b.InsertRequests(ctx, []store.NewRequest{again, other, newRequest("wa_prune_new", "sha256:b")}, nil)
	if err != nil || len(results) != 3 {
		t.Fatalf("InsertRequests = %+v, %v", results, err)
	}
	if r := results[0]; r.Inserted || r.Pruned == nil || r.Pruned.Status != "succeeded" || r.Pruned.BasisHash != "sha256:b" {
		t.Errorf("replay of a pruned key = %+v", r)
	}
	if r := results[1]; r.Inserted || r.Pruned == nil || r.Pruned.BasisHash == other.BasisHash || r.Pruned.Status != "rejected" {
		t.Errorf("a pruned key with another basis = %+v", r)
	}
	if !results[2].Inserted {
		t.Errorf("a new key beside pruned ones = %+v", results[2])
	}
	res, err := b.Intake(ctx, succeeded.Key, func() (store.NewRequest, error) { return again, nil }, nil)
	if err != nil || res.Inserted || res.Pruned == nil || res.Pruned.Status != "succeeded" {
		t.Errorf("Intake of a pruned key = %+v, %v", res, err)
	}
	batcher := store.NewIntakeBatcher(b, 1, 8)
	if err := batcher.Start(ctx); err != nil {
		t.Fatal(err)
	}
	res, err = batcher.Insert(ctx, again)
	if err := batcher.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err != nil || res.Inserted || res.Pruned == nil || res.Pruned.Key != succeeded.Key {
		t.Errorf("a batched replay of a pruned key = %+v, %v", res, err)
	}
	if got := b.Count(t, `SELECT count(*) FROM requests WHERE key IN ('wa_prune_rejected', 'wa_prune_succeeded')`); got != 0 {
		t.Errorf("a pruned key was stored again: %d requests", got)
	}
	if got := b.Count(t, `SELECT count(*) FROM executions`); got != 1 {
		t.Errorf("%d executions, want only the in-flight one's", got)
	}

	// Nothing more is settled before the cutoff.
	if n, err := b.Prune(ctx, store.PruneParams{Before: cutoff}); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v", n, err)
	}
}

func testPruneDuringIntakeLosesNothing(t *testing.T, b *Backend) {
	ctx := context.Background()
	const n = 40
	old := make([]store.NewRequest, n)
	for i := range old {
		old[i] = newRequest(fmt.Sprintf("wa_prune_old_%02d", i), "sha256:b")
		req := insert(t, b, old[i])
		if _, ok, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
			t.Fatalf("cancel: %v, %v", ok, err)
		}
	}
	cutoff := time.Now().Add(time.Minute)

	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if got, err := b.Prune(ctx, store.PruneParams{Before: cutoff, BatchSize: 3}); err != nil || got != n {
			errs <- fmt.Errorf("prune = %d, %v; want %d", got, err, n)
		}
	}()
	for i := range n {
		wg.Add(2)
		go func() { // a new intent
			defer wg.Done()
			p := newRequest(fmt.Sprintf("wa_prune_new_%02d", i), "sha256:b")
			if _, inserted, err := b.InsertRequest(ctx, p); err != nil || !inserted {
				errs <- fmt.Errorf("new intent %s: inserted %v, %v", p.Key, inserted, err)
			}
		}()
		go func() { // a replay of a key being pruned: its request or its tombstone
			defer wg.Done()
			// A prune that commits while the insert waits on its row fails
			// the insert; the ledger asks again and finds the tombstone.
			var res store.InsertResult
			rs, err := b.InsertRequests(ctx, []store.NewRequest{old[i]}, nil)
			if err == nil {
				res = rs[0]
			}
			switch {
			case err != nil:
				errs <- fmt.Errorf("replay %s: %v", old[i].Key, err)
			case res.Inserted:
				errs <- fmt.Errorf("replay %s stored the key again", old[i].Key)
			case res.Pruned == nil && res.Request.Key != old[i].Key:
				errs <- fmt.Errorf("replay %s found neither its request nor its tombstone: %+v", old[i].Key, res)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := b.Count(t, `SELECT count(*) FROM requests WHERE key LIKE 'wa_prune_new_%'`); got != n {
		t.Errorf("%d new requests stored, want %d", got, n)
	}
	if got := b.Count(t, `SELECT count(*) FROM requests WHERE key LIKE 'wa_prune_old_%'`); got != 0 {
		t.Errorf("%d old requests left or stored again", got)
	}
	if got := b.Count(t, `SELECT count(*) FROM tombstones`); got != n {
		t.Errorf("%d tombstones, want %d", got, n)
	}
}

func testPruneWaitsForPendingCallbacks(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	req := settledRequest(t, b, "wa_prune_callback", "cancelled")
	cutoff := time.Now().Add(time.Minute)
	if n, err := b.Prune(ctx, store.PruneParams{Before: cutoff}); err != nil || n != 0 {
		t.Fatalf("Prune with the callback pending = %d, %v; want nothing", n, err)
	}
	claimed, err := b.ClaimCallbacks(ctx, 10, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimCallbacks = %d, %v", len(claimed), err)
	}
	if err := b.MarkCallbackDelivered(ctx, claimed[0], 200); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Prune(ctx, store.PruneParams{Before: cutoff}); err != nil || n != 1 {
		t.Fatalf("Prune once the callback was delivered = %d, %v", n, err)
	}
	if rows := rowsOf(t, b, req.ID); rows["callbacks"] != 0 || rows["requests"] != 0 || rows["outbox"] != 0 || rows["events"] == 0 {
		t.Errorf("rows after the prune: %v", rows)
	}
}
