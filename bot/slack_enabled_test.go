package bot_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// Slack turned on over a database that ran without it: the card posts
// queued for requests that have settled since (rejected and cancelled in
// the inbox, expired, written and succeeded) post nothing and are done;
// the request still pending gets its card, and so does the write that
// needs review, whose buttons are how it is resolved. Nothing is left
// pending or failed for a retry, and the sweep queues nothing more.
func TestSlackTurnedOnPostsOnlyWhatIsStillOpen(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		var sent atomic.Int32
		provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent.Add(1)
			w.Header().Set("Content-Type", "application/json")
			if r.Header.Get("Idempotency-Key") == "needs-review-1" {
				w.WriteHeader(http.StatusNotImplemented) // an answer the executor was not taught
				return
			}
			_, _ = w.Write([]byte(`{"id":"cr_1"}`))
		}))
		t.Cleanup(provider.Close)
		b := setup(t, &options{driver: drv})
		ex := executor.New(executor.Config{
			DB: b.store, Secrets: [][]byte{[]byte("dispatch-secret")}, Worker: "worker-a", BatchSize: 10, Concurrency: 2,
			Tools: map[string]executor.Tool{"billing.credit": {Method: http.MethodPost, URL: provider.URL + "/credits",
				Timeout: 2 * time.Second, MaxAttempts: 5, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour}},
			Backoff: func(int) time.Duration { return 0 }, VerifyWindow: -1, Logger: slog.New(slog.DiscardHandler),
		})
		decide := func(req store.Request, verdict store.Verdict) {
			t.Helper()
			if _, err := b.review.Decide(b.ctx, approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
				Verdict: verdict, DecidedBy: "UANA", Via: "inbox"}); err != nil {
				t.Fatalf("deciding: %v", err)
			}
		}

		// Slack is off: nothing delivers the outbox while these happen.
		rejected := b.submit(intent{n: 1})
		decide(rejected, store.VerdictReject)
		cancelled := b.submit(intent{n: 2})
		b.cancel(cancelled)
		swept := b.submitAgo(time.Minute, intent{tool: "fast.expiring", n: 3})
		if n, err := b.review.ExpireOnce(b.ctx); err != nil || n != 1 {
			t.Fatalf("expiry sweep: %d, %v", n, err)
		}
		unswept := b.submitAgo(time.Minute, intent{tool: "fast.expiring", n: 4}) // past its expiry, not yet swept
		succeeded := b.submit(intent{n: 5})
		decide(succeeded, store.VerdictApprove)
		review := b.submit(intent{n: 6, key: "needs-review-1"})
		decide(review, store.VerdictApprove)
		if n, err := ex.DispatchOnce(b.ctx); err != nil || n != 2 || sent.Load() != 2 {
			t.Fatalf("dispatch: %d, %v, %d sends", n, err, sent.Load())
		}
		pending := b.submit(intent{n: 7})
		for _, c := range []struct {
			req  store.Request
			want store.RequestStatus
		}{{rejected, store.RequestRejected}, {cancelled, store.RequestCancelled}, {swept, store.RequestExpired},
			{unswept, store.RequestPending}, {succeeded, store.RequestApproved}, {review, store.RequestApproved}, {pending, store.RequestPending}} {
			if got := b.request(c.req.ID).Status; got != c.want {
				t.Fatalf("request %s is %s, want %s", c.req.Key, got, c.want)
			}
		}
		if e, err := b.store.LatestExecution(b.ctx, review.ID); err != nil || e.State != store.ExecNeedsReview {
			t.Fatalf("the write that needs review is %s (%v)", e.State, err)
		}
		if b.fake.Count("") != 0 {
			t.Fatalf("Slack was called %d times while off", b.fake.Count(""))
		}

		// Slack on.
		b.deliver()
		cards := map[string]bool{}
		for _, m := range b.fake.Messages(billingChan) {
			var md struct {
				Payload struct {
					RequestID string `json:"request_id"`
				} `json:"event_payload"`
			}
			if err := json.Unmarshal(m.Metadata, &md); err != nil {
				t.Fatalf("card metadata %s: %v", m.Metadata, err)
			}
			cards[md.Payload.RequestID] = true
		}
		if len(cards) != 2 || !cards[pending.ID] || !cards[review.ID] {
			var keys []string
			for _, r := range []store.Request{rejected, cancelled, swept, unswept, succeeded, review, pending} {
				if cards[r.ID] {
					keys = append(keys, r.Key)
				}
			}
			t.Fatalf("cards posted for %v; want the pending request's and the one that needs review only", keys)
		}
		if c, err := b.store.CardFor(b.ctx, pending.ID, 1, onSlack); err != nil || tsOf(c.Ref) == "" {
			t.Fatalf("the pending request's card is not recorded: %+v, %v", c, err)
		}
		if n := b.count(`SELECT count(*) FROM outbox WHERE state <> 'delivered'`); n != 0 {
			t.Fatalf("%d outbox rows left to retry", n)
		}
		if n, err := b.bot.ConvergeOnce(b.ctx); err != nil || n != 0 {
			for _, r := range []store.Request{rejected, cancelled, swept, unswept, succeeded, review, pending} {
				t.Logf("%s: %d pending rows", r.Key, b.count(`SELECT count(*) FROM outbox WHERE state = 'pending' AND request_id = $1`, r.ID))
			}
			t.Fatalf("the sweep queued %d more (%v)", n, err)
		}
		if replies := b.fake.Replies(billingChan, b.card(review.ID, 1).TS); len(replies) != 1 || !strings.Contains(replies[0].Text, "needs review") {
			t.Errorf("the needs-review thread has %+v", replies)
		}
	})
}
