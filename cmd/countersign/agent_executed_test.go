package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/receipt"
	"github.com/countersign/countersign/store"
)

// serve's executor sends the approved write of a tool it dispatches and
// never the one of an execute: agent tool, whose receipt verifies against
// the JWKS serve publishes; the agent's outcome report settles it.
func TestServeNeverSendsAnAgentExecutedWrite(t *testing.T) {
	t.Parallel()
	var writes atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writes.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer provider.Close()
	a := testApp(t, &config.Config{ReceiptKey: testReceiptKeyPEM(t), File: config.FileConfig{Tools: map[string]config.ToolConfig{
		"billing.credit": {Channel: "C0BILLING", Approvers: []string{"UANA"}, Dispatch: config.DispatchConfig{URL: provider.URL + "/credits"}},
		"billing.payout": {Channel: "C0BILLING", Approvers: []string{"UANA"}, Execute: approvals.ExecuteAgent},
	}}}, nil)
	ctx := context.Background()
	if err := a.start(ctx); err != nil {
		t.Fatal(err)
	}
	approve := func(tool string) store.Request {
		req, _, err := a.review.Submit(ctx, "smoke-agent", approvals.Intent{RunID: "r", Step: json.RawMessage("1"), Tool: tool,
			Effect: json.RawMessage(`{"invoice":"inv_1","amount_cents":100}`)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.review.Decide(ctx, approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
			Verdict: store.VerdictApprove, DecidedBy: "UANA", Via: "test"}); err != nil {
			t.Fatal(err)
		}
		return req
	}
	payout, credit := approve("billing.payout"), approve("billing.credit")
	deadline := time.Now().Add(15 * time.Second)
	for {
		e, err := a.db.LatestExecution(ctx, credit.ID)
		if err == nil && e.State == store.ExecSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dispatched write never succeeded: %+v, %v", e, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Past several dispatch ticks: the payout is still waiting for its agent.
	time.Sleep(2500 * time.Millisecond)
	if n := writes.Load(); n != 1 {
		t.Errorf("the provider got %d writes, want the credit's alone", n)
	}
	e, err := a.db.LatestExecution(ctx, payout.ID)
	if err != nil || e.State != store.ExecReady || e.Attempts != 0 {
		t.Fatalf("the payout's execution = %+v, %v; want ready, never attempted", e, err)
	}

	srv := httptest.NewServer(a.mux)
	defer srv.Close()
	verifier, err := receipt.FetchVerifier(ctx, nil, srv.URL+"/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := a.db.RequestByRef(ctx, payout.ID)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.db.DecisionFor(ctx, req.ID, req.Round)
	if err != nil {
		t.Fatal(err)
	}
	token := a.review.Receipt(req, &d)
	if _, err := verifier.Verify(token, receipt.Want{Key: req.Key, Tool: "billing.payout", Body: []byte(`{"amount_cents":100,"invoice":"inv_1"}`)}); err != nil {
		t.Errorf("the payout's receipt does not verify against serve's JWKS: %v", err)
	}
	if _, err := a.review.ReportOutcome(ctx, approvals.Agent{Name: "smoke-agent"}, payout.Key, approvals.OutcomeReport{Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	if e, err := a.db.LatestExecution(ctx, payout.ID); err != nil || e.State != store.ExecSucceeded {
		t.Errorf("after the report: %+v, %v", e, err)
	}
}

// testReceiptKeyPEM is a new receipt signing key, as COUNTERSIGN_RECEIPT_KEY
// takes it.
func testReceiptKeyPEM(t *testing.T) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := receipt.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(keyPEM)
}
