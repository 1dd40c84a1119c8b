package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/hook/apitest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

const otherToken = "other-agent-token"

// setupCallbacks is the hook with billing-agent (testToken), which has a
// callback, and other-agent (otherToken), which has none.
func setupCallbacks(t *testing.T, drv *drivertest.Driver) *bundle {
	t.Helper()
	bk := drv.Open(t, true)
	bk.Store.(*store.Ledger).SetCallbackAgents("billing-agent")
	logger := slog.New(slog.DiscardHandler)
	svc := approvalstest.New(t, approvals.Config{DB: bk.Store, Logger: logger, Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Approvers: []string{approverA}, RequestTTL: time.Hour},
	}})
	var agents Agents
	for _, a := range []struct {
		name, token string
		callback    bool
	}{{"billing-agent", testToken, true}, {"other-agent", otherToken, false}} {
		sum := sha256.Sum256([]byte(a.token))
		agent, err := ParseAgent(a.name, hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		agent.Callback = a.callback
		agents = append(agents, agent)
	}
	answers := apitest.NewRecorder()
	server := httptest.NewServer(apitest.Conform(t, document(t), answers, NewHandler(svc, agents, bk.Notifier(t), logger, NewMetrics(prometheus.NewRegistry()))))
	t.Cleanup(server.Close)
	return &bundle{store: bk.Store, svc: svc, server: server, ctx: context.Background(), exec: bk.Exec, queryInt: bk.QueryInt, answers: answers}
}

func TestHookRedrive(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupCallbacks(t, drv)
		v := b.post(t, vectorBody).view(t)
		if v.Callback != nil {
			t.Errorf("a new request shows callback %+v", v.Callback)
		}
		r := b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/redrive", testToken, nil, nil)
		if code, _ := r.errorCode(t); r.status != http.StatusConflict || code != approvals.CodeNoDelivery {
			t.Errorf("redrive before any callback = %d %s", r.status, r.body)
		}

		r = b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/cancel", testToken, nil, nil)
		if got := r.view(t); r.status != 200 || got.Callback == nil || got.Callback.State != string(store.CallbackPending) ||
			got.Callback.Attempts != 0 || got.Callback.LastStatus != nil {
			t.Fatalf("cancel = %d %s; want a pending callback", r.status, r.body)
		}
		claimed, err := b.store.ClaimCallbacks(b.ctx, 10, time.Hour)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("ClaimCallbacks = %d, %v", len(claimed), err)
		}
		if err := b.store.MarkCallbackDelivered(b.ctx, claimed[0], 204); err != nil {
			t.Fatal(err)
		}
		r = b.do(t, http.MethodGet, "/v1/requests/"+v.Key, testToken, nil, nil)
		if got := r.view(t); got.Callback == nil || got.Callback.State != string(store.CallbackDelivered) || got.Callback.Attempts != 1 ||
			got.Callback.LastStatus == nil || *got.Callback.LastStatus != 204 {
			t.Errorf("after delivery GET = %s", r.body)
		}

		// Another agent cannot redrive it: the same 404 as a request that does not exist.
		stranger := b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/redrive", otherToken, nil, nil)
		missing := b.do(t, http.MethodPost, "/v1/requests/wa_nothing_here_at_all/redrive", otherToken, nil, nil)
		if code, _ := stranger.errorCode(t); stranger.status != http.StatusNotFound || code != approvals.CodeNotFound || withoutRequestID(t, stranger.body) != withoutRequestID(t, missing.body) {
			t.Errorf("another agent's redrive = %d %s; a missing request = %d %s", stranger.status, stranger.body, missing.status, missing.body)
		}
		if n, err := b.store.CountCallbackBacklog(b.ctx); err != nil || n != 0 {
			t.Errorf("backlog after the refused redrive = %d, %v; want 0", n, err)
		}

		r = b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/redrive", testToken, nil, nil)
		// Its attempts start again (and with them the backoff); the last
		// answer stays until the next.
		if got := r.view(t); r.status != 200 || got.Callback == nil || got.Callback.State != string(store.CallbackPending) ||
			got.Callback.Attempts != 0 || got.Callback.LastStatus == nil || *got.Callback.LastStatus != 204 {
			t.Fatalf("redrive = %d %s", r.status, r.body)
		}
		again, err := b.store.ClaimCallbacks(b.ctx, 10, time.Hour)
		if err != nil || len(again) != 1 || again[0].DeliveryID != claimed[0].DeliveryID {
			t.Errorf("after the redrive claimed %+v, %v; want delivery %s again", again, err, claimed[0].DeliveryID)
		}

		// An agent without a callback has nothing to redrive.
		other := b.do(t, http.MethodPost, "/v1/requests", otherToken, bytes.NewReader([]byte(vectorBodyOther)), nil).view(t)
		if r := b.do(t, http.MethodPost, "/v1/requests/"+other.Key+"/cancel", otherToken, nil, nil); r.status != 200 || r.view(t).Callback != nil {
			t.Fatalf("cancel of other-agent's request = %d %s", r.status, r.body)
		}
		r = b.do(t, http.MethodPost, "/v1/requests/"+other.Key+"/redrive", otherToken, nil, nil)
		if code, _ := r.errorCode(t); r.status != http.StatusConflict || code != approvals.CodeNoCallback {
			t.Errorf("redrive without a callback = %d %s", r.status, r.body)
		}
	})
}

const vectorBodyOther = `{"run_id": "r-other", "step": 1, "tool": "billing.credit",
 "effect": {"invoice": "inv_1", "amount_cents": 100, "currency": "USD"}}`
