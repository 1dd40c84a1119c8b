package bot_test

import (
	"context"
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

// executorResolver resolves with a real executor built once the bundle's
// store exists.
type executorResolver struct{ ex *executor.Executor }

func (r *executorResolver) Resolve(ctx context.Context, requestID string, executionID int64, action, by string) error {
	return r.ex.Resolve(ctx, requestID, executionID, action, by)
}

// Resolving a write that needs review follows the rule a vote to approve
// follows: whoever the request was made for, an owner of its agent, and
// anyone outside its approvers are refused, and nothing changes (the
// execution stays in needs_review, no event but the audited refusal, nothing
// sent); an eligible approver resolves it.
func TestResolutionFollowsTheVotingRule(t *testing.T) {
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
		b.fake.SetGroup("S0FINANCE")
		// billing.quorum: UANA, UBEN, UCAT, UDAN and UOWN approve, two
		// needed; UOWN owns billing-agent.
		resolver.ex = executor.New(executor.Config{
			DB: b.store, Secrets: [][]byte{[]byte("dispatch-secret")}, Worker: "worker-a", BatchSize: 10, Concurrency: 2,
			Tools: map[string]executor.Tool{"billing.quorum": {Method: http.MethodPost, URL: provider.URL + "/credits",
				Timeout: 2 * time.Second, MaxAttempts: 5, ClaimTimeout: time.Minute, ApprovalTTL: 24 * time.Hour}},
			Backoff: func(int) time.Duration { return 0 }, VerifyWindow: -1, Logger: slog.New(slog.DiscardHandler),
		})
		req := b.submit(intent{tool: "billing.quorum", requestedFor: "UBEN"})
		for _, by := range []string{"UANA", "UCAT"} {
			if _, err := b.review.Decide(b.ctx, approvals.Decision{RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash,
				Verdict: store.VerdictApprove, DecidedBy: by, Via: "slack"}); err != nil {
				t.Fatalf("%s approving: %v", by, err)
			}
		}
		if n, err := resolver.ex.DispatchOnce(b.ctx); err != nil || n != 1 {
			t.Fatalf("first dispatch: %d, %v", n, err)
		}
		b.deliver()
		value := b.card(req.ID, 1).ButtonValue(executor.ActionResend)
		if value == "" {
			t.Fatal("the needs-review card has no resend button")
		}
		events := func() (changes, refusals int) {
			t.Helper()
			evs, err := b.store.EventsFor(b.ctx, req.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range evs {
				if e.Kind == "resolution_refused" {
					refusals++
				} else {
					changes++
				}
			}
			return changes, refusals
		}
		before, _ := events()

		refused := []struct{ user, reason, words string }{
			{"UBEN", "self_approval", "This request was made for you"},
			{"UOWN", "agent_owner", "You own the agent that asked for this"},
			{"UZED", "not_an_approver", "You are not an approver for this tool"},
		}
		actions := []string{executor.ActionMarkSucceeded, executor.ActionMarkFailed, executor.ActionResend}
		for _, r := range refused {
			for _, action := range actions {
				if status := b.click(r.user, billingChan, action, value); status != http.StatusOK {
					t.Fatalf("%s %s: status %d", r.user, action, status)
				}
			}
			answers := b.ephemerals(r.user)
			if len(answers) != len(actions) {
				t.Fatalf("%s got %d answers, want %d: %q", r.user, len(answers), len(actions), answers)
			}
			for _, a := range answers {
				if !strings.Contains(a, r.words) {
					t.Errorf("%s was answered %q, want %q", r.user, a, r.words)
				}
			}
			if n := b.count(`SELECT count(*) FROM events WHERE kind = 'resolution_refused' AND actor = $1`, r.user); n != len(actions) {
				t.Errorf("%s: %d refused resolutions audited, want %d", r.user, n, len(actions))
			}
		}
		if n, err := resolver.ex.DispatchOnce(b.ctx); err != nil || n != 0 {
			t.Fatalf("dispatch after the refusals: %d, %v", n, err)
		}
		e, err := b.store.LatestExecution(b.ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.State != store.ExecNeedsReview || e.Attempts != 1 || sent.Load() != 1 {
			t.Fatalf("after the refusals the execution is %s, attempt %d, %d sends", e.State, e.Attempts, sent.Load())
		}
		if after, refusals := events(); after != before || refusals != len(refused)*len(actions) {
			t.Fatalf("events: %d state changes (was %d), %d refusals", after, before, refusals)
		}
		// An approver who is none of them resolves it: a resend runs.
		b.click("UDAN", billingChan, executor.ActionResend, value)
		if answers := b.ephemerals("UDAN"); len(answers) != 1 || !strings.Contains(answers[0], "Recorded") {
			t.Fatalf("UDAN's resend was answered %q", answers)
		}
		if n, err := resolver.ex.DispatchOnce(b.ctx); err != nil || n != 1 {
			t.Fatalf("dispatch after the resend: %d, %v", n, err)
		}
		if e, err = b.store.LatestExecution(b.ctx, req.ID); err != nil || e.State != store.ExecSucceeded || sent.Load() != 2 {
			t.Fatalf("after the resend: %s (%v), %d sends", e.State, err, sent.Load())
		}
	})
}
