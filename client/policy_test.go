package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/storetest"
)

// frozenMessage is the deny rule's message in policyGate.
const frozenMessage = "Credits to a frozen invoice are never sent."

// policyGate is the hook and an executor in this process, on a scratch
// PostgreSQL database, with billing.credit under three rules: credits to
// inv_0 are denied (frozen-invoice), credits of at most 100 cents allowed
// (small), the rest asked of local:reviewer. The test sets the rules on the
// tool directly; DispatchOnce sends what is ready to the fake provider.
type policyGate struct {
	URL      string
	exec     *executor.Executor
	provider *providertest.Provider
}

func startPolicyGate(t *testing.T) *policyGate {
	t.Helper()
	backend := drivertest.PostgresAt(t, storetest.NewURL(t))
	logger := slog.New(slog.DiscardHandler)
	svc := approvalstest.New(t, approvals.Config{DB: backend.Store, Logger: logger, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{"local:reviewer"}, RequestTTL: time.Hour, MaxAttempts: 3,
			Tiers: []approvals.Tier{
				{Name: "frozen-invoice", When: approvals.Condition{Field: "invoice", Op: approvals.OpEQ, Value: "inv_0"},
					Verdict: approvals.VerdictDeny, Deny: frozenMessage},
				{Name: "small", When: approvals.Condition{Field: "amount_cents", Op: approvals.OpLTE, Value: json.Number("100")},
					Verdict: approvals.VerdictAllow},
			}},
	}})
	sum := sha256.Sum256([]byte(agentToken))
	agent, err := hook.ParseAgent("client-agent", hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	h := hook.NewHandler(svc, hook.Agents{agent}, backend.Notifier(t), logger, hook.NewMetrics(prometheus.NewRegistry()))
	srv := httptest.NewServer(apitest.Conform(t, apitest.Load(t, hook.OpenAPIDocument()), nil, h))
	t.Cleanup(srv.Close)

	provider := providertest.New()
	provider.Secret = []byte(dispatchKey)
	providerSrv := providertest.Start(t, provider)
	exec := executor.New(executor.Config{DB: backend.Store, Logger: logger, Secrets: [][]byte{[]byte(dispatchKey)},
		Metrics: executor.NewMetrics(prometheus.NewRegistry()),
		Tools: map[string]executor.Tool{"billing.credit": {Method: http.MethodPost, URL: providerSrv.URL + "/credits", Timeout: 5 * time.Second,
			KeyAware: true, MaxAttempts: 3, ClaimTimeout: time.Minute}}})
	return &policyGate{URL: srv.URL, exec: exec, provider: provider}
}

// creditTo is credit to another invoice.
func creditTo(invoice string, amount int) client.Intent {
	in := credit(amount)
	in.Effect = map[string]any{"invoice": invoice, "amount_cents": amount, "currency": "USD"}
	return in
}

// A write the policy denies is ErrDeniedByPolicy with the rule and the
// key, on every post; Do returns it at once rather than waiting; the key
// names a request rejected by the rule, and nothing reaches the provider.
func TestDeniedByPolicy(t *testing.T) {
	t.Parallel()
	g := startPolicyGate(t)
	c := client.New(g.URL, agentToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	frozen := creditTo("inv_0", 4200)
	key, err := client.Key(frozen)
	if err != nil {
		t.Fatal(err)
	}

	for i := range 2 {
		req, err := c.Request(ctx, frozen)
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrDeniedByPolicy) || !errors.As(err, &apiErr) || req != nil {
			t.Fatalf("post %d: %+v, %v", i+1, req, err)
		}
		if errors.Is(err, client.ErrKeyReused) || apiErr.Status != http.StatusForbidden || apiErr.Tier != "frozen-invoice" || apiErr.Key != key ||
			!strings.Contains(apiErr.Message, frozenMessage) || !strings.Contains(err.Error(), "denied_by_policy (403)") {
			t.Errorf("post %d: %+v", i+1, apiErr)
		}
	}

	started := time.Now()
	req, err := c.Do(ctx, frozen)
	if !errors.Is(err, client.ErrDeniedByPolicy) || errors.Is(err, context.DeadlineExceeded) || req != nil {
		t.Fatalf("Do: %+v, %v", req, err)
	}
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("Do took %s to return a denial", took)
	}

	got, err := c.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != client.StatusRejected || !got.Settled || got.Decision == nil || got.Decision.By != "policy:frozen-invoice" ||
		got.Decision.Via != client.ViaPolicy || got.Decision.Reason != frozenMessage || got.Execution != nil ||
		got.Policy.Verdict != client.PolicyDeny || got.Policy.TierName != "frozen-invoice" || got.Policy.Approvals != 0 {
		t.Errorf("the denied request = %+v", got)
	}
	if n, err := g.exec.DispatchOnce(ctx); err != nil || n != 0 {
		t.Errorf("DispatchOnce after a denial = %d, %v", n, err)
	}
	if n := g.provider.Received(); n != 0 {
		t.Errorf("the provider received %d writes", n)
	}
}

// A write the policy allows is approved on arrival, by the rule, with its
// execution ready; Do waits for the outcome as after any approval, and the
// provider gets the write once.
func TestAllowedByPolicy(t *testing.T) {
	t.Parallel()
	g := startPolicyGate(t)
	c := client.New(g.URL, agentToken)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small := creditTo("inv_1", 42)

	req, err := c.Request(ctx, small)
	if err != nil {
		t.Fatal(err)
	}
	p := req.Policy
	if req.Status != client.StatusApproved || req.Settled || req.Decision == nil || req.Decision.By != "policy:small" ||
		req.Decision.Via != client.ViaPolicy || req.Execution == nil || req.Execution.State != client.ExecReady {
		t.Fatalf("the allowed request = %+v", req)
	}
	if p.Verdict != client.PolicyAllow || p.TierName != "small" || p.Approvals != 0 || !strings.HasPrefix(p.Version, "sha256:") {
		t.Errorf("its policy = %+v", p)
	}

	done := make(chan error, 1)
	var outcome *client.Request
	go func() {
		var err error
		outcome, err = c.Do(ctx, small)
		done <- err
	}()
	if n, err := g.exec.DispatchOnce(ctx); err != nil || n != 1 {
		t.Fatalf("DispatchOnce = %d, %v", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !outcome.Succeeded() || !outcome.Settled || outcome.Key != req.Key || outcome.Decision.By != "policy:small" {
		t.Errorf("the outcome = %+v", outcome)
	}
	if n := g.provider.Writes(req.Key); n != 1 {
		t.Errorf("the provider wrote %d times", n)
	}
}

// A write no rule decides is asked of a reviewer, as before verdicts.
func TestAskedByPolicy(t *testing.T) {
	t.Parallel()
	g := startPolicyGate(t)
	req, err := client.New(g.URL, agentToken).Request(context.Background(), creditTo("inv_1", 9000))
	if err != nil {
		t.Fatal(err)
	}
	if p := req.Policy; req.Status != client.StatusPending || req.Decision != nil || p.Verdict != client.PolicyAsk ||
		p.TierName != approvals.DefaultTierName || p.Approvals != 1 || p.Tier != nil {
		t.Errorf("the asked request = %+v", req)
	}
}
