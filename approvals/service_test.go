package approvals

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

func TestSubmitStoresSnapshotKeyAndAuditTrail(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req, created, err := b.svc.Submit(b.ctx, "billing-agent", newIntent(nil))
		if err != nil || !created {
			t.Fatalf("Submit = %v, created %v", err, created)
		}
		if req.Key != "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c" {
			t.Errorf("key = %s", req.Key)
		}
		if string(req.Snapshot) != `{"amount_cents":4200,"currency":"USD","invoice":"inv_8841"}` {
			t.Errorf("snapshot = %s", req.Snapshot)
		}
		if req.PayloadHash != PayloadHash(req.Snapshot) || req.Status != store.RequestPending || req.Round != 1 {
			t.Errorf("request = %+v", req)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE request_id = $1 AND kind = 'requested'`, req.ID); got != 1 {
			t.Errorf("requested events = %d, want 1", got)
		}
		if got := b.count(t, `SELECT count(*) FROM outbox WHERE request_id = $1 AND kind = 'post_card' AND state = 'pending'`, req.ID); got != 1 {
			t.Errorf("post_card rows = %d, want 1", got)
		}
	})
}

func TestSubmitConcurrentIdenticalIntentsGiveOneRow(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		const n = 64
		ids := make([]string, n)
		created := make([]bool, n)
		errs := make([]error, n)
		together(n, func(i int) {
			req, c, err := b.svc.Submit(b.ctx, "billing-agent", newIntent(nil))
			ids[i], created[i], errs[i] = req.ID, c, err
		})
		nCreated := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("submit %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("submit %d got id %s, submit 0 got %s", i, ids[i], ids[0])
			}
			if created[i] {
				nCreated++
			}
		}
		if nCreated != 1 {
			t.Errorf("%d submits report created, want 1", nCreated)
		}
		b.expectCounts(t, map[string]int{
			`SELECT count(*) FROM requests`: 1,
			`SELECT count(*) FROM outbox`:   1,
			`SELECT count(*) FROM events`:   1,
		})
	})
}

func TestSubmitKeyReusedLeavesOriginalUntouched(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.submit(t, nil)

		// Same derived key is impossible with other fields, so reuse a client key.
		in := newIntent(nil)
		in.IdempotencyKey = "client-key-0001"
		first, _, err := b.svc.Submit(b.ctx, "billing-agent", in)
		if err != nil {
			t.Fatal(err)
		}
		in.Effect = []byte(`{"invoice":"inv_8841","amount_cents":9999,"currency":"USD"}`)
		if _, _, err := b.svc.Submit(b.ctx, "billing-agent", in); !errors.Is(err, ErrKeyReused) {
			t.Fatalf("reuse with another effect: %v, want ErrKeyReused", err)
		}
		after, err := b.store.RequestByKey(b.ctx, "client-key-0001")
		if err != nil {
			t.Fatal(err)
		}
		if string(after.Snapshot) != string(first.Snapshot) || after.PayloadHash != first.PayloadHash || !after.UpdatedAt.Equal(first.UpdatedAt) {
			t.Errorf("original changed: before %+v after %+v", first, after)
		}
		if got := b.count(t, `SELECT count(*) FROM requests`); got != 2 {
			t.Errorf("requests = %d, want 2 (the derived-key one and the client-key one)", got)
		}
		if got := b.count(t, `SELECT count(*) FROM outbox WHERE request_id = $1`, first.ID); got != 1 {
			t.Errorf("outbox rows for the original = %d, want 1", got)
		}
	})
}

func TestReplayReturnsSameRequestInEveryState(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		now := time.Now()
		b.svc.Now = func() time.Time { return now }

		pending := b.submit(t, &intentOpts{RunID: ptr("run-pending")})
		approved := b.submit(t, &intentOpts{RunID: ptr("run-approved")})
		rejected := b.submit(t, &intentOpts{RunID: ptr("run-rejected")})
		cancelled := b.submit(t, &intentOpts{RunID: ptr("run-cancelled")})
		expired := b.submit(t, &intentOpts{RunID: ptr("run-expired")})

		if _, err := b.svc.Decide(b.ctx, approve(approved, approverA)); err != nil {
			t.Fatal(err)
		}
		rej := approve(rejected, approverA)
		rej.Verdict = store.VerdictReject
		if _, err := b.svc.Decide(b.ctx, rej); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Cancel(b.ctx, billingAgent, cancelled.Key); err != nil {
			t.Fatal(err)
		}
		// A pending replay, before the sweep.
		if got, created, err := b.svc.Submit(b.ctx, "billing-agent", newIntent(&intentOpts{RunID: ptr("run-pending")})); err != nil || created || got.ID != pending.ID || got.Status != store.RequestPending {
			t.Fatalf("pending replay = %+v, %v, %v", got, created, err)
		}
		later := now.Add(2 * time.Hour)
		b.svc.Now = func() time.Time { return later }
		if n, err := b.svc.ExpireOnce(b.ctx); err != nil || n != 2 {
			t.Fatalf("ExpireOnce = %d, %v; want the two pending requests", n, err)
		}

		for _, tt := range []struct {
			run    string
			want   store.Request
			status store.RequestStatus
		}{
			{"run-pending", pending, store.RequestExpired},
			{"run-approved", approved, store.RequestApproved},
			{"run-rejected", rejected, store.RequestRejected},
			{"run-cancelled", cancelled, store.RequestCancelled},
			{"run-expired", expired, store.RequestExpired},
		} {
			before := b.count(t, `SELECT count(*) FROM outbox`)
			got, created, err := b.svc.Submit(b.ctx, "billing-agent", newIntent(&intentOpts{RunID: ptr(tt.run)}))
			if err != nil || created {
				t.Fatalf("%s: replay = %v, created %v", tt.run, err, created)
			}
			if got.ID != tt.want.ID || got.Key != tt.want.Key || got.Status != tt.status {
				t.Errorf("%s: replay gave %s %s, want %s %s", tt.run, got.ID, got.Status, tt.want.ID, tt.status)
			}
			if after := b.count(t, `SELECT count(*) FROM outbox`); after != before {
				t.Errorf("%s: replay wrote %d outbox rows", tt.run, after-before)
			}
		}
		if got := b.count(t, `SELECT count(*) FROM requests`); got != 5 {
			t.Errorf("requests = %d, want 5", got)
		}
	})
}

func TestReplayRedrivesACardThatWasNeverPosted(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		// The post failed permanently (say channel_not_found, since fixed).
		if err := b.exec(`UPDATE outbox SET state = 'failed' WHERE request_id = $1`, req.ID); err != nil {
			t.Fatal(err)
		}
		b.submit(t, nil)
		b.submit(t, nil)
		if got := b.count(t, `SELECT count(*) FROM outbox WHERE request_id = $1 AND kind = 'post_card' AND state = 'pending'`, req.ID); got != 1 {
			t.Errorf("pending post_card rows after replays = %d, want 1", got)
		}
		// Once posted, replays never re-notify.
		if err := b.store.SetCard(b.ctx, req.ID, "C0BILLING", "1700000000.000100"); err != nil {
			t.Fatal(err)
		}
		if err := b.exec(`UPDATE outbox SET state = 'delivered' WHERE request_id = $1`, req.ID); err != nil {
			t.Fatal(err)
		}
		b.submit(t, nil)
		if got := b.count(t, `SELECT count(*) FROM outbox WHERE request_id = $1 AND state = 'pending'`, req.ID); got != 0 {
			t.Errorf("pending rows after replay of a posted card = %d, want 0", got)
		}
	})
}

func TestSubmitUnknownTool(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		_, _, err := b.svc.Submit(b.ctx, "billing-agent", newIntent(&intentOpts{Tool: ptr("db.drop")}))
		if !errors.Is(err, ErrUnknownTool) {
			t.Fatalf("err = %v, want ErrUnknownTool", err)
		}
		var unknown *UnknownToolError
		if !errors.As(err, &unknown) || !slices.Equal(unknown.Available, slices.Sorted(maps.Keys(b.svc.CurrentTools()))) {
			t.Errorf("err = %#v, want the configured tools, sorted", err)
		}
		if got := b.count(t, `SELECT count(*) FROM requests`); got != 0 {
			t.Errorf("requests = %d, want 0", got)
		}
	})
}

func TestCancel(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		req := b.submit(t, nil)
		got, err := b.svc.Cancel(b.ctx, billingAgent, req.ID)
		if err != nil || got.Status != store.RequestCancelled {
			t.Fatalf("Cancel = %v, %s", err, got.Status)
		}
		var notPending *NotPendingError
		if _, err := b.svc.Cancel(b.ctx, billingAgent, req.Key); !errors.As(err, &notPending) || notPending.Status != store.RequestCancelled {
			t.Fatalf("second Cancel = %v", err)
		}
		if _, err := b.svc.Decide(b.ctx, approve(got, approverA)); !errors.As(err, &notPending) {
			t.Fatalf("approve after cancel = %v, want NotPendingError", err)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE request_id = $1 AND kind = 'cancelled'`, req.ID); got != 1 {
			t.Errorf("cancelled events = %d, want 1", got)
		}
	})
}

// An unknown tool's refusal names the tools the agent may use: all of them
// as a list, the first 20 in its words.
func TestUnknownToolRefusalNamesTheTools(t *testing.T) {
	t.Parallel()
	ref := RefusalFor(&UnknownToolError{Tool: "db.drop", Available: []string{"billing.credit", "crm.note"}})
	if ref.Code != CodeUnknownTool || ref.Message != `Tool "db.drop" is not configured. Tools this agent may use: billing.credit, crm.note.` ||
		!slices.Equal(ref.Tools, []string{"billing.credit", "crm.note"}) {
		t.Errorf("refusal = %+v", ref)
	}
	var many []string
	for i := range 25 {
		many = append(many, fmt.Sprintf("tool.%02d", i))
	}
	ref = RefusalFor(&UnknownToolError{Tool: "db.drop", Available: many})
	if !strings.Contains(ref.Message, "tool.19, and 5 more (GET /v1/tools lists them all).") || strings.Contains(ref.Message, "tool.20") || len(ref.Tools) != 25 {
		t.Errorf("refusal of 25 tools = %+v", ref)
	}
	if ref := RefusalFor(&UnknownToolError{Tool: "db.drop"}); ref.Message != `Tool "db.drop" is not configured. No tool is configured.` {
		t.Errorf("refusal without tools = %+v", ref)
	}
}
