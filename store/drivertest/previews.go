package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func init() {
	contract = append(contract,
		struct {
			name string
			test func(t *testing.T, b *Backend)
		}{"PreviewIsFetchedOnceAndItsFirstOutcomeWins", testPreviewIsFetchedOnceAndItsFirstOutcomeWins},
		struct {
			name string
			test func(t *testing.T, b *Backend)
		}{"PreviousByBusinessIDIsTheLatestEarlierOfTheTool", testPreviousByBusinessIDIsTheLatestEarlierOfTheTool},
	)
}

func testPreviewIsFetchedOnceAndItsFirstOutcomeWins(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_preview_once")
	if _, err := b.PreviewFor(ctx, req.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PreviewFor before any claim = %v; want ErrNotFound", err)
	}
	start := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	claim := store.ClaimPreviewParams{RequestID: req.ID, Now: &start, StaleBefore: start.Add(-time.Hour)}
	var claimed [8]bool
	Release(len(claimed), func(i int) {
		ok, err := b.ClaimPreview(ctx, claim)
		if err != nil {
			t.Errorf("ClaimPreview: %v", err)
		}
		claimed[i] = ok
	})
	n := 0
	for _, ok := range claimed {
		if ok {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d of 8 concurrent claims won; want 1", n)
	}
	p, err := b.PreviewFor(ctx, req.ID)
	if err != nil || p.State != store.PreviewFetching || !p.StartedAt.Equal(start) || p.FinishedAt != nil {
		t.Fatalf("PreviewFor while fetching = %+v, %v", p, err)
	}

	// A fetch still live is not taken over; one older than StaleBefore is.
	later := start.Add(30 * time.Second)
	if ok, err := b.ClaimPreview(ctx, store.ClaimPreviewParams{RequestID: req.ID, Now: &later, StaleBefore: start}); err != nil || ok {
		t.Fatalf("claim of a live fetch = %v, %v; want false", ok, err)
	}
	if ok, err := b.ClaimPreview(ctx, store.ClaimPreviewParams{RequestID: req.ID, Now: &later, StaleBefore: later}); err != nil || !ok {
		t.Fatalf("claim of a stale fetch = %v, %v; want true", ok, err)
	}

	done := later.Add(time.Second)
	changes := []store.PreviewChange{
		{Field: "amount_cents", Before: json.RawMessage(`1000`), After: json.RawMessage(`5200`)},
		{Field: "status", Before: json.RawMessage(`"open"`), After: json.RawMessage(`null`)},
	}
	ok, err := b.RecordPreview(ctx, store.Preview{RequestID: req.ID, State: store.PreviewReady, Changes: changes, FinishedAt: &done})
	if err != nil || !ok {
		t.Fatalf("RecordPreview = %v, %v", ok, err)
	}
	// The first outcome stands: a late fetcher's failure changes nothing,
	// and a done preview is never claimed again.
	if ok, err := b.RecordPreview(ctx, store.Preview{RequestID: req.ID, State: store.PreviewFailed, Reason: "timed out"}); err != nil || ok {
		t.Fatalf("second RecordPreview = %v, %v; want false", ok, err)
	}
	if ok, err := b.ClaimPreview(ctx, store.ClaimPreviewParams{RequestID: req.ID, StaleBefore: time.Now().Add(time.Hour)}); err != nil || ok {
		t.Fatalf("claim of a done preview = %v, %v; want false", ok, err)
	}
	p, err = b.PreviewFor(ctx, req.ID)
	if err != nil || p.State != store.PreviewReady || p.Reason != "" || p.FinishedAt == nil || !p.FinishedAt.Equal(done) {
		t.Fatalf("PreviewFor = %+v, %v", p, err)
	}
	got, _ := json.Marshal(p.Changes)
	want, _ := json.Marshal(changes)
	if string(got) != string(want) {
		t.Errorf("changes = %s; want %s", got, want)
	}

	// A summary, and a failure with its reason, on other requests.
	other := insertRequest(t, b, "wa_preview_summary")
	failed := insertRequest(t, b, "wa_preview_failed")
	for _, r := range []store.Request{other, failed} {
		if ok, err := b.ClaimPreview(ctx, store.ClaimPreviewParams{RequestID: r.ID, StaleBefore: start}); err != nil || !ok {
			t.Fatalf("ClaimPreview(%s) = %v, %v", r.Key, ok, err)
		}
	}
	if _, err := b.RecordPreview(ctx, store.Preview{RequestID: other.ID, State: store.PreviewReady, Summary: "Closes ticket T-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RecordPreview(ctx, store.Preview{RequestID: failed.ID, State: store.PreviewFailed, Reason: "status 500"}); err != nil {
		t.Fatal(err)
	}
	if p, err := b.PreviewFor(ctx, other.ID); err != nil || p.Summary != "Closes ticket T-1" || p.Changes != nil {
		t.Errorf("summary preview = %+v, %v", p, err)
	}
	if p, err := b.PreviewFor(ctx, failed.ID); err != nil || p.State != store.PreviewFailed || p.Reason != "status 500" {
		t.Errorf("failed preview = %+v, %v", p, err)
	}
	if _, err := b.RecordPreview(ctx, store.Preview{RequestID: failed.ID, State: store.PreviewFetching}); err == nil {
		t.Error("RecordPreview took a fetching outcome")
	}

	// A preview leaves with its request.
	if _, ok, err := b.CancelRequest(ctx, failed.ID, "agent:agent", nil); err != nil || !ok {
		t.Fatalf("cancel: %v, %v", ok, err)
	}
	if n, err := b.Prune(ctx, store.PruneParams{Before: time.Now().Add(time.Minute)}); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want the cancelled request", n, err)
	}
	if _, err := b.PreviewFor(ctx, failed.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the pruned request's preview = %v; want it gone", err)
	}
	if p, err := b.PreviewFor(ctx, other.ID); err != nil || p.State != store.PreviewReady {
		t.Errorf("another request's preview after the prune = %+v, %v", p, err)
	}
}

func testPreviousByBusinessIDIsTheLatestEarlierOfTheTool(t *testing.T, b *Backend) {
	ctx := context.Background()
	base := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	add := func(key, toolName, effect string, at time.Duration) store.Request {
		p := newRequest(key, "sha256:b")
		p.Tool = toolName
		p.Snapshot = []byte(effect)
		now := base.Add(at)
		p.Now = &now
		return insert(t, b, p)
	}
	oldest := add("wa_bid_oldest", tool, `{"invoice":"inv_1","amount_cents":100}`, 0)
	previous := add("wa_bid_previous", tool, `{"invoice":"inv_1","amount_cents":200}`, time.Minute)
	add("wa_bid_elsewhere", tool, `{"invoice":"inv_2","note":"inv_1"}`, 2*time.Minute) // inv_1, not as the invoice
	add("wa_bid_other_tool", "other.tool", `{"invoice":"inv_1"}`, 3*time.Minute)
	current := add("wa_bid_current", tool, `{"invoice":"inv_1","amount_cents":300}`, 4*time.Minute)
	add("wa_bid_later", tool, `{"invoice":"inv_1","amount_cents":400}`, 5*time.Minute)

	got, err := store.PreviousByBusinessID(ctx, b, tool, "invoice", "inv_1", current.CreatedAt)
	if err != nil || got.ID != previous.ID {
		t.Fatalf("PreviousByBusinessID = %s, %v; want %s", got.Key, err, previous.Key)
	}
	if got, err := store.PreviousByBusinessID(ctx, b, tool, "invoice", "inv_1", previous.CreatedAt); err != nil || got.ID != oldest.ID {
		t.Errorf("before the previous = %s, %v; want %s", got.Key, err, oldest.Key)
	}
	for _, c := range []struct{ tool, field, value string }{
		{tool, "invoice", "inv_1"}, // before the oldest: none
		{tool, "note", "inv_9"},
		{tool, "invoice", ""},
		{"other.tool", "invoice", "inv_1"},
	} {
		if got, err := store.PreviousByBusinessID(ctx, b, c.tool, c.field, c.value, oldest.CreatedAt); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PreviousByBusinessID(%v) = %s, %v; want ErrNotFound", c, got.Key, err)
		}
	}
}
