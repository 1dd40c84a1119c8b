package drivertest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func testInsertThenReplaySameKey(t *testing.T, b *Backend) {
	ctx := context.Background()
	first := insertRequest(t, b, "wa_replay")
	again, inserted, err := b.InsertRequest(ctx, newRequest("wa_replay", "sha256:b"))
	if err != nil || inserted || again.ID != first.ID {
		t.Fatalf("second insert = %s, inserted %v, %v; want %s, false", again.ID, inserted, err, first.ID)
	}
	replayed, queued, err := b.ReplayRequest(ctx, "wa_replay")
	if err != nil || replayed.ID != first.ID || !queued || replayed.Status != store.RequestPending {
		t.Fatalf("ReplayRequest = %s %s, queued %v, %v", replayed.ID, replayed.Status, queued, err)
	}
	if _, _, err := b.ReplayRequest(ctx, "wa_never"); err != store.ErrNotFound {
		t.Errorf("ReplayRequest(unknown) = %v, want ErrNotFound", err)
	}
	if n := b.Count(t, `SELECT count(*) FROM requests`); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
	if first.Round != 1 || !first.ExpiresAt.Equal(first.CreatedAt.Add(time.Hour)) || string(first.Step) != "1" {
		t.Errorf("stored request = round %d, expires %v after creation, step %s", first.Round, first.ExpiresAt.Sub(first.CreatedAt), first.Step)
	}
}

func testInsertRequestConflictInsertsNothing(t *testing.T, b *Backend) {
	insertRequest(t, b, "wa_conflict")
	// Key reuse with a different basis: the stored request comes back
	// with its own basis hash for the caller to compare.
	got, inserted, err := b.InsertRequest(context.Background(), store.NewRequest{
		Key: "wa_conflict", BasisHash: "sha256:other", RunID: "r", Step: []byte(`1`), Tool: tool,
		Snapshot: []byte(`{"a":2}`), PayloadHash: "sha256:q", RequestedBy: "agent", TTL: 1,
	})
	if err != nil || inserted || got.BasisHash != "sha256:b" || string(got.Snapshot) != `{"a":1}` {
		t.Fatalf("second insert = basis %s snapshot %s, inserted %v, %v", got.BasisHash, got.Snapshot, inserted, err)
	}
	events, outbox := b.Count(t, `SELECT count(*) FROM events`), b.Count(t, `SELECT count(*) FROM outbox`)
	if events != 1 || outbox != 1 {
		t.Errorf("events %d, outbox %d after a conflicting insert; want 1 and 1", events, outbox)
	}
}

func testInsertRequestsMixesNewAndExistingKeys(t *testing.T, b *Backend) {
	existing := insertRequest(t, b, "wa_existing")
	results, err := b.InsertRequests(context.Background(), []store.NewRequest{
		newRequest("wa_new_1", "sha256:b"), newRequest("wa_existing", "sha256:b"), newRequest("wa_new_2", "sha256:b"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || !results[0].Inserted || results[1].Inserted || !results[2].Inserted {
		t.Fatalf("results = %+v", results)
	}
	if results[0].Key != "wa_new_1" || results[1].ID != existing.ID || results[2].Key != "wa_new_2" {
		t.Errorf("results out of order: %s %s %s", results[0].Key, results[1].Key, results[2].Key)
	}
	// One event and one card post per request; the existing key's post is
	// still queued, so it is not re-driven.
	events, outbox := b.Count(t, `SELECT count(*) FROM events`), b.Count(t, `SELECT count(*) FROM outbox`)
	if events != 3 || outbox != 3 {
		t.Errorf("events %d, outbox %d; want 3 and 3", events, outbox)
	}
}

// The same intent twice in one batch (an agent's retry that caught up with
// its first try in the group commit) is one request with one event and one
// card post, and both get it.
func testSameKeyTwiceInOneBatchInsertsOnce(t *testing.T, b *Backend) {
	results, err := b.InsertRequests(context.Background(), []store.NewRequest{
		newRequest("wa_twice", "sha256:b"), newRequest("wa_other", "sha256:b"), newRequest("wa_twice", "sha256:b"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || results[0].ID == "" || results[0].ID != results[2].ID {
		t.Fatalf("results = %+v, want one request for both", results)
	}
	if results[0].Inserted == results[2].Inserted && results[0].Inserted {
		t.Errorf("both of one key's calls say inserted")
	}
	events, outbox := b.Count(t, `SELECT count(*) FROM events`), b.Count(t, `SELECT count(*) FROM outbox`)
	if events != 2 || outbox != 2 {
		t.Errorf("events %d, outbox %d; want 2 and 2 (one each per request)", events, outbox)
	}
}

func testConcurrentIdenticalInsertsInsertOnce(t *testing.T, b *Backend) {
	const callers = 32
	ids := make([]string, callers)
	inserted := make([]bool, callers)
	errs := make([]error, callers)
	Release(callers, func(i int) {
		var req store.Request
		req, inserted[i], errs[i] = b.InsertRequest(context.Background(), newRequest("wa_race", "sha256:b"))
		ids[i] = req.ID
	})
	winners := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] || ids[i] == "" {
			t.Errorf("caller %d got id %q, caller 0 %q", i, ids[i], ids[0])
		}
		if inserted[i] {
			winners++
		}
	}
	if winners != 1 {
		t.Errorf("%d callers inserted, want 1", winners)
	}
	if n := b.Count(t, `SELECT count(*) FROM events`); n != 1 {
		t.Errorf("events = %d, want 1", n)
	}
}

func testRedriveCardOnlyWhenNoPostIsQueued(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_redrive")
	if err := b.RedriveCard(ctx, req.ID); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'post_card'`); n != 1 {
		t.Fatalf("posts after re-drive with one queued = %d, want 1", n)
	}
	rows, err := b.ClaimOutbox(ctx, 10, time.Minute)
	if err != nil || len(rows) != 1 {
		t.Fatalf("ClaimOutbox = %v, %v", rows, err)
	}
	if err := b.MarkOutboxFailed(ctx, rows[0].ID, "channel_not_found"); err != nil {
		t.Fatal(err)
	}
	if err := b.RedriveCard(ctx, strings.ToUpper(req.ID)); err != nil {
		t.Fatal(err)
	}
	if pending, err := b.PostPending(ctx, req.ID, 1); err != nil || !pending {
		t.Errorf("PostPending after re-drive = %v, %v; want true", pending, err)
	}
	if others, err := b.OtherPostRows(ctx, rows[0]); err != nil || !others {
		t.Errorf("OtherPostRows = %v, %v; want true", others, err)
	}
}

func testRequestByRef(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_byref")
	for _, ref := range []string{req.ID, strings.ToUpper(req.ID), req.Key} {
		got, err := b.RequestByRef(ctx, ref)
		if err != nil || got.ID != req.ID {
			t.Errorf("RequestByRef(%s) = %s, %v", ref, got.ID, err)
		}
	}
	for _, ref := range []string{"wa_missing", "00000000-0000-0000-0000-000000000000", "not-a-uuid-but-36-characters-long-xx"} {
		if _, err := b.RequestByRef(ctx, ref); err != store.ErrNotFound {
			t.Errorf("RequestByRef(%s) = %v, want ErrNotFound", ref, err)
		}
	}
	if got, err := b.RequestByKey(ctx, req.Key); err != nil || got.ID != req.ID {
		t.Errorf("RequestByKey = %s, %v", got.ID, err)
	}
	if _, err := b.RequestByID(ctx, "wa_byref"); err != store.ErrNotFound {
		t.Errorf("RequestByID(key) = %v, want ErrNotFound", err)
	}
}

func testCancelRequest(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_cancel")
	got, cancelled, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil)
	if err != nil || !cancelled || got.Status != store.RequestCancelled {
		t.Fatalf("CancelRequest = %s, %v, %v", got.Status, cancelled, err)
	}
	got, cancelled, err = b.CancelRequest(ctx, req.ID, "agent:agent", nil)
	if err != nil || cancelled || got.Status != store.RequestCancelled {
		t.Errorf("second CancelRequest = %s, %v, %v; want cancelled, false", got.Status, cancelled, err)
	}
	if _, _, err := b.CancelRequest(ctx, "00000000-0000-4000-8000-000000000000", "a", nil); err != store.ErrNotFound {
		t.Errorf("CancelRequest(missing) = %v, want ErrNotFound", err)
	}
	if _, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1")); err != nil || ok {
		t.Errorf("Decide after cancel = %v, %v; want not decided", ok, err)
	}
	if kinds := eventKinds(t, b, req.ID); strings.Join(kinds, ",") != "requested,cancelled" {
		t.Errorf("events = %v", kinds)
	}
	if state, err := b.CardState(ctx, req.ID, 1); err != nil || state != "cancelled" {
		t.Errorf("CardState = %q, %v", state, err)
	}
}

func testExpireDue(t *testing.T, b *Backend) {
	ctx := context.Background()
	created := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	soon, later := newRequest("wa_soon", "sha256:b"), newRequest("wa_later", "sha256:b")
	soon.TTL, soon.Now = time.Minute, &created
	later.TTL, later.Now = time.Hour, &created
	req, other := insert(t, b, soon), insert(t, b, later)
	cancelled := insertRequest(t, b, "wa_cancelled")
	if _, _, err := b.CancelRequest(ctx, cancelled.ID, "a", nil); err != nil {
		t.Fatal(err)
	}
	if !req.CreatedAt.Equal(created) {
		t.Errorf("CreatedAt = %v, want the pinned %v", req.CreatedAt, created)
	}
	before := created.Add(time.Minute - time.Microsecond)
	if expired, err := b.ExpireDue(ctx, &before, 10); err != nil || len(expired) != 0 {
		t.Fatalf("ExpireDue before expiry = %d, %v", len(expired), err)
	}
	at := created.Add(time.Minute)
	expired, err := b.ExpireDue(ctx, &at, 10)
	if err != nil || len(expired) != 1 || expired[0].ID != req.ID || expired[0].Status != store.RequestExpired {
		t.Fatalf("ExpireDue = %+v, %v", expired, err)
	}
	if !expired[0].UpdatedAt.Equal(at) {
		t.Errorf("UpdatedAt = %v, want %v", expired[0].UpdatedAt, at)
	}
	// Expired is its own state: a decision no longer lands, cancel refuses.
	decideAt := at
	p := decide(req, store.VerdictApprove, "U1")
	p.Now = &decideAt
	if _, _, ok, err := b.Decide(ctx, p); err != nil || ok {
		t.Errorf("Decide after expiry = %v, %v", ok, err)
	}
	if got, ok, err := b.CancelRequest(ctx, req.ID, "a", nil); err != nil || ok || got.Status != store.RequestExpired {
		t.Errorf("CancelRequest after expiry = %s, %v, %v", got.Status, ok, err)
	}
	if got, _ := b.RequestByID(ctx, other.ID); got.Status != store.RequestPending {
		t.Errorf("the later request is %s, want pending", got.Status)
	}
	if kinds := eventKinds(t, b, req.ID); strings.Join(kinds, ",") != "requested,expired" {
		t.Errorf("events = %v", kinds)
	}
	if n := b.Count(t, fmt.Sprintf(`SELECT count(*) FROM outbox WHERE kind = 'update_card' AND request_id = '%s'`, req.ID)); n != 1 {
		t.Errorf("card updates = %d, want 1", n)
	}
}

// No stored key or indexed effect string holds U+0000, so a lookup by one
// finds nothing; PostgreSQL would otherwise refuse the query itself.
func testLookupsWithNULFindNothing(t *testing.T, b *Backend) {
	ctx := context.Background()
	insertRequest(t, b, "wa_nul")
	for _, ref := range []string{"wa_nul\x00", "\x00"} {
		if _, err := b.RequestByKey(ctx, ref); err != store.ErrNotFound {
			t.Errorf("RequestByKey(%q) = %v, want ErrNotFound", ref, err)
		}
		if _, err := b.RequestByRef(ctx, ref); err != store.ErrNotFound {
			t.Errorf("RequestByRef(%q) = %v, want ErrNotFound", ref, err)
		}
		if got, err := b.RequestsByKeyPrefix(ctx, ref, 10); err != nil || len(got) != 0 {
			t.Errorf("RequestsByKeyPrefix(%q) = %d requests, %v; want none", ref, len(got), err)
		}
		if got, err := b.RequestsByEffectString(ctx, ref, 10); err != nil || len(got) != 0 {
			t.Errorf("RequestsByEffectString(%q) = %d requests, %v; want none", ref, len(got), err)
		}
	}
}

// The reads are the driver's own (store.Reader): an id that is not a UUID
// names no row, as a missing one does, on every driver.
func testReadsOfIdsThatCannotExistFindNothing(t *testing.T, b *Backend) {
	ctx := context.Background()
	insertRequest(t, b, "wa_real")
	for _, id := range []string{"not-a-uuid", "wa_real", "\x00"} {
		notFound := map[string]error{}
		_, notFound["RequestByID"] = b.RequestByID(ctx, id)
		_, notFound["DecisionFor"] = b.DecisionFor(ctx, id, 1)
		_, notFound["LatestDecision"] = b.LatestDecision(ctx, id)
		_, notFound["LatestExecution"] = b.LatestExecution(ctx, id)
		_, notFound["CardFor"] = b.CardFor(ctx, id, 1, "slack")
		_, notFound["CardState"] = b.CardState(ctx, id, 1)
		_, notFound["LatestCallback"] = b.LatestCallback(ctx, id)
		for name, err := range notFound {
			if err != store.ErrNotFound {
				t.Errorf("%s(%q) = %v, want ErrNotFound", name, id, err)
			}
		}
		lists := map[string]func() (int, error){
			"EventsFor":     func() (int, error) { got, err := b.EventsFor(ctx, id); return len(got), err },
			"ExecutionsFor": func() (int, error) { got, err := b.ExecutionsFor(ctx, id); return len(got), err },
			"VotesFor":      func() (int, error) { got, err := b.VotesFor(ctx, id, 1); return len(got), err },
		}
		for name, read := range lists {
			if n, err := read(); err != nil || n != 0 {
				t.Errorf("%s(%q) = %d rows, %v; want none", name, id, n, err)
			}
		}
		flags := map[string]func() (bool, error){
			"PostPending":     func() (bool, error) { return b.PostPending(ctx, id, 1) },
			"NudgeQueued":     func() (bool, error) { return b.NudgeQueued(ctx, id, 1, store.NudgeReminder) },
			"ExecutionExists": func() (bool, error) { return b.ExecutionExists(ctx, 1, id) },
		}
		for name, read := range flags {
			if ok, err := read(); err != nil || ok {
				t.Errorf("%s(%q) = %v, %v; want false", name, id, ok, err)
			}
		}
	}
}
