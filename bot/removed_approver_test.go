package bot_test

import (
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// Removing an approver from a tool and reloading takes their power at once,
// over requests frozen with them: their vote on a pending request and their
// resend of a write that needs review are refused with no_longer_approver,
// audited, and change nothing (the provider gets no second send). An
// approver the configuration still lists votes and resends as before.
func TestRemovedApproverLosesPowerAfterAReload(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		// The first send is answered 501, an answer the executor was not taught:
		// the write needs review. Later sends succeed.
		var sent atomic.Int32
		provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			if sent.Add(1) == 1 {
				w.WriteHeader(http.StatusNotImplemented)
				return
			}
			_, _ = w.Write([]byte(`{"id":"cr_1"}`))
		}))
		t.Cleanup(provider.Close)
		resolver := &executorResolver{}
		b := setup(t, &options{driver: drv, resolver: resolver})
		resolver.ex = executor.New(executor.Config{
			DB: b.store, Secrets: [][]byte{[]byte("dispatch-secret")}, Worker: "worker-a", BatchSize: 10, Concurrency: 2,
			Tools: map[string]executor.Tool{"billing.quorum": {Method: http.MethodPost, URL: provider.URL + "/credits",
				Timeout: 2 * time.Second, MaxAttempts: 5, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour}},
			Backoff: func(int) time.Duration { return 0 }, VerifyWindow: -1, Logger: slog.New(slog.DiscardHandler),
		})
		// billing.quorum: UANA, UBEN, UCAT, UDAN and UOWN approve, two needed.
		review := b.submit(intent{tool: "billing.quorum"})
		pending := b.submit(intent{tool: "billing.quorum", n: 1})
		for _, by := range []string{"UANA", "UCAT"} {
			if _, err := b.review.Decide(b.ctx, approvals.Decision{RequestID: review.ID, Round: review.Round, PayloadHash: review.PayloadHash,
				Verdict: store.VerdictApprove, DecidedBy: by, Via: "slack"}); err != nil {
				t.Fatalf("%s approving: %v", by, err)
			}
		}
		if n, err := resolver.ex.DispatchOnce(b.ctx); err != nil || n != 1 || sent.Load() != 1 {
			t.Fatalf("first dispatch: %d, %v, %d sends", n, err, sent.Load())
		}
		b.deliver()
		resend := b.card(review.ID, 1).ButtonValue(executor.ActionResend)
		if resend == "" {
			t.Fatal("the needs-review card has no resend button")
		}

		// UCAT leaves billing.quorum; the configuration is reloaded.
		tools := maps.Clone(b.review.CurrentTools())
		tool := tools["billing.quorum"]
		tool.Approvers = slices.DeleteFunc(slices.Clone(tool.Approvers), func(id string) bool { return id == "UCAT" })
		tools["billing.quorum"] = tool
		b.review.Reconfigure(tools, map[string][]string{"billing-agent": {"UOWN"}})
		if got := b.review.Approvers(pending); !slices.Contains(got, "UCAT") {
			t.Fatalf("the pending request's frozen approvers are %v; UCAT should still be listed on it", got)
		}

		const words = "You are no longer an approver for this tool"
		b.click("UCAT", billingChan, executor.ActionResend, resend)
		b.click("UCAT", billingChan, executor.ActionMarkSucceeded, resend)
		b.click("UCAT", billingChan, bot.ActionApprove, decisionValue(pending))
		b.click("UCAT", billingChan, bot.ActionReject, decisionValue(pending))
		answers := b.ephemerals("UCAT")
		if len(answers) != 4 {
			t.Fatalf("UCAT got %d answers, want 4: %q", len(answers), answers)
		}
		for _, a := range answers {
			if !strings.Contains(a, words) {
				t.Errorf("UCAT was answered %q, want %q", a, words)
			}
		}
		if n := b.count(`SELECT count(*) FROM events WHERE kind = 'resolution_refused' AND actor = 'UCAT'`); n != 2 {
			t.Errorf("%d refused resolutions audited, want 2", n)
		}
		if n := b.count(`SELECT count(*) FROM events WHERE kind = 'decision_refused' AND actor = 'UCAT'`); n != 2 {
			t.Errorf("%d refused votes audited, want 2", n)
		}
		if n, err := resolver.ex.DispatchOnce(b.ctx); err != nil || n != 0 {
			t.Fatalf("dispatch after the refused resend: %d, %v", n, err)
		}
		if sent.Load() != 1 {
			t.Fatalf("the provider got %d sends after the refused resend, want 1", sent.Load())
		}
		if e, err := b.store.LatestExecution(b.ctx, review.ID); err != nil || e.State != store.ExecNeedsReview {
			t.Fatalf("after the refused resolutions the execution is %s (%v)", e.State, err)
		}
		if got := b.request(pending.ID); got.Status != store.RequestPending {
			t.Fatalf("after the refused votes the request is %s", got.Status)
		}
		if n := b.count(`SELECT count(*) FROM votes WHERE voter = 'UCAT' AND request_id = $1`, pending.ID); n != 0 {
			t.Fatalf("%d votes of UCAT recorded", n)
		}

		// Approvers the configuration still lists act as before.
		b.click("UDAN", billingChan, executor.ActionResend, resend)
		if answers := b.ephemerals("UDAN"); len(answers) != 1 || !strings.Contains(answers[0], "Recorded") {
			t.Fatalf("UDAN's resend was answered %q", answers)
		}
		if n, err := resolver.ex.DispatchOnce(b.ctx); err != nil || n != 1 || sent.Load() != 2 {
			t.Fatalf("dispatch after UDAN's resend: %d, %v, %d sends", n, err, sent.Load())
		}
		b.click("UANA", billingChan, bot.ActionApprove, decisionValue(pending))
		b.click("UBEN", billingChan, bot.ActionApprove, decisionValue(pending))
		if got := b.request(pending.ID).Status; got != store.RequestApproved {
			t.Fatalf("after two listed approvers approved, the request is %s", got)
		}
	})
}
