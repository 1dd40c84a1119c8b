package hook

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/receipt"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// payoutTool is an execute: agent tool: its agent performs its writes.
const payoutTool = "billing.payout"

// withAgentTool adds the agent-executed tool to b's service and a key that
// signs its receipts.
func (b *bundle) withAgentTool(t *testing.T, outcomeTimeout time.Duration) {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b.svc.Receipts = receipt.NewKeySet(key)
	b.svc.Tools[payoutTool] = approvals.Tool{Name: payoutTool, Approvers: []string{approverA}, RequestTTL: time.Hour, MaxAttempts: 1,
		Execute: approvals.ExecuteAgent, OutcomeTimeout: outcomeTimeout}
}

// approvedPayout posts a payout at step and approves it, and returns its
// representation.
func (b *bundle) approvedPayout(t *testing.T, step int) wire.Request {
	t.Helper()
	created := b.post(t, fmt.Sprintf(`{"run_id":"r-pay","step":%d,"tool":%q,"effect":{"to":"acct_1","amount_cents":%d}}`, step, payoutTool, 100+step))
	if created.status != http.StatusCreated {
		t.Fatalf("create = %d %s", created.status, created.body)
	}
	v := created.view(t)
	if v.Receipt != "" {
		t.Errorf("a pending request has a receipt")
	}
	if _, err := b.svc.Decide(b.ctx, approvals.Decision{RequestID: v.ID, Round: 1, PayloadHash: v.PayloadHash,
		Verdict: store.VerdictApprove, DecidedBy: approverA, Via: "slack"}); err != nil {
		t.Fatal(err)
	}
	got := b.do(t, http.MethodGet, "/v1/requests/"+v.Key, testToken, nil, nil)
	if got.status != http.StatusOK {
		t.Fatalf("get = %d %s", got.status, got.body)
	}
	return got.view(t)
}

func (b *bundle) reportOutcome(t *testing.T, key, body string) response {
	t.Helper()
	return b.do(t, http.MethodPost, "/v1/requests/"+key+"/outcome", testToken, strings.NewReader(body), nil)
}

// An approved agent-executed request carries a receipt that the Go
// verifier accepts against the JWKS the hook serves without a token, for
// the representation's effect and key, and refuses for a changed byte.
func TestApprovedAgentWriteCarriesAReceiptTheJWKSVerifies(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withAgentTool(t, 0)
		v := b.approvedPayout(t, 1)
		if v.Receipt == "" || v.Execution == nil || v.Execution.State != wire.ExecReady {
			t.Fatalf("approved payout: receipt %q, execution %+v", v.Receipt, v.Execution)
		}
		jwks := b.do(t, http.MethodGet, JWKSPath, "", nil, nil)
		if jwks.status != http.StatusOK {
			t.Fatalf("GET %s = %d %s", JWKSPath, jwks.status, jwks.body)
		}
		verifier, err := receipt.NewVerifier(jwks.body)
		if err != nil {
			t.Fatal(err)
		}
		claims, err := verifier.Verify(v.Receipt, receipt.Want{Key: v.Key, Tool: payoutTool, Body: v.Effect})
		if err != nil {
			t.Fatalf("the receipt does not verify: %v", err)
		}
		if claims.Agent != "billing-agent" || claims.DecidedBy != approverA || claims.Via != "human" ||
			claims.Expiry-claims.IssuedAt != int64(approvals.DefaultOutcomeTimeout/time.Second) {
			t.Errorf("claims = %+v", claims)
		}
		changed := []byte(strings.Replace(string(v.Effect), "101", "102", 1))
		if _, err := verifier.Verify(v.Receipt, receipt.Want{Key: v.Key, Body: changed}); !errors.Is(err, receipt.ErrEffect) {
			t.Errorf("a changed effect = %v, want ErrEffect", err)
		}
		// A tool countersign sends itself gets no receipt.
		credit := b.post(t, vectorBody).view(t)
		if _, err := b.svc.Decide(b.ctx, approvals.Decision{RequestID: credit.ID, Round: 1, PayloadHash: credit.PayloadHash,
			Verdict: store.VerdictApprove, DecidedBy: approverA, Via: "slack"}); err != nil {
			t.Fatal(err)
		}
		if got := b.do(t, http.MethodGet, "/v1/requests/"+credit.Key, testToken, nil, nil).view(t); got.Receipt != "" {
			t.Errorf("a dispatched tool's approval has a receipt")
		}
	})
}

// The agent's outcome report settles the write once: the same report again
// answers the same and records nothing, another is 409 outcome_conflict,
// and a request of a dispatched tool takes none.
func TestOutcomeReportedTwiceIsOne(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withAgentTool(t, 0)
		v := b.approvedPayout(t, 2)
		report := `{"status":"succeeded","provider_ref":"po_9","detail":"paid"}`
		for i := range 2 {
			got := b.reportOutcome(t, v.Key, report)
			if got.status != http.StatusOK {
				t.Fatalf("report %d = %d %s", i+1, got.status, got.body)
			}
			w := got.view(t)
			if w.Execution == nil || w.Execution.State != wire.ExecSucceeded || w.Execution.ProviderRef != "po_9" || !w.Settled {
				t.Errorf("report %d: execution %+v, settled %v", i+1, w.Execution, w.Settled)
			}
		}
		events, err := b.store.EventsFor(b.ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		succeeded := 0
		for _, e := range events {
			if e.Kind == store.EventSucceeded {
				succeeded++
			}
		}
		if succeeded != 1 {
			t.Errorf("%d succeeded events, want 1", succeeded)
		}
		conflict := b.reportOutcome(t, v.Key, `{"status":"failed","detail":"declined"}`)
		if conflict.status != http.StatusConflict || !strings.Contains(string(conflict.body), approvals.CodeOutcomeConflict) {
			t.Errorf("another report = %d %s", conflict.status, conflict.body)
		}
		if bad := b.reportOutcome(t, v.Key, `{"status":"done"}`); bad.status != http.StatusUnprocessableEntity {
			t.Errorf("status done = %d %s", bad.status, bad.body)
		}
		credit := b.post(t, vectorBody).view(t)
		if got := b.reportOutcome(t, credit.Key, report); got.status != http.StatusConflict ||
			!strings.Contains(string(got.body), approvals.CodeNotAgentExecuted) {
			t.Errorf("a report for a dispatched tool = %d %s", got.status, got.body)
		}
	})
}

// An approved agent-executed write whose outcome does not come within the
// tool's outcome_timeout needs review; a late report still settles it.
func TestNoOutcomeInTimeNeedsReview(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withAgentTool(t, time.Hour)
		v := b.approvedPayout(t, 3)
		if n, err := b.svc.ExpireOutcomesOnce(b.ctx); err != nil || n != 0 {
			t.Fatalf("sweep within the timeout = %d, %v", n, err)
		}
		// Two hours on: the sweep's clock, and the late report's.
		b.svc.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		if n, err := b.svc.ExpireOutcomesOnce(b.ctx); err != nil || n != 1 {
			t.Fatalf("sweep past the timeout = %d, %v", n, err)
		}
		w := b.do(t, http.MethodGet, "/v1/requests/"+v.Key, testToken, nil, nil).view(t)
		if w.Execution == nil || w.Execution.State != wire.ExecNeedsReview || w.Execution.Code != store.CodeOutcomeTimeout {
			t.Fatalf("execution = %+v", w.Execution)
		}
		late := b.reportOutcome(t, v.Key, `{"status":"failed","detail":"card declined"}`)
		if late.status != http.StatusOK || late.view(t).Execution.State != wire.ExecFailed {
			t.Errorf("a late report = %d %s", late.status, late.body)
		}
	})
}
