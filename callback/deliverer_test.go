package callback_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/internal/signature"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

const (
	agentName = "billing-agent"
	secret    = "callback-secret"
)

// endpoint is an agent's callback URL on 127.0.0.1 that records what it
// receives and answers with the statuses it is given, then 200.
type endpoint struct {
	*httptest.Server
	mu       sync.Mutex
	answers  []int
	received []received
}

type received struct {
	event, delivery string
	body            []byte
	signatureOK     bool
	// signature and path are the header and the path as received.
	signature, path string
}

func newEndpoint(t *testing.T, answers ...int) *endpoint {
	e := &endpoint{answers: answers}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// v2: the method, the path, the delivery id and the body.
		ok := signature.VerifyRequest([]byte(secret), r.Header.Get(signature.Header), signature.RequestOf(r), body, time.Now(), 5*time.Minute) == nil
		e.mu.Lock()
		e.received = append(e.received, received{r.Header.Get(callback.EventHeader), r.Header.Get(callback.DeliveryHeader), body, ok,
			r.Header.Get(signature.Header), r.URL.EscapedPath()})
		status := http.StatusOK
		if len(e.answers) > 0 {
			status, e.answers = e.answers[0], e.answers[1:]
		}
		e.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *endpoint) got() []received {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]received(nil), e.received...)
}

type bundle struct {
	b        *drivertest.Backend
	d        *callback.Deliverer
	registry *prometheus.Registry
	metrics  *callback.Metrics
}

// setup opens a store whose agentName has a callback to url, and a
// Deliverer that retries at once.
func setup(t *testing.T, drv *drivertest.Driver, url string) *bundle {
	t.Helper()
	return setupWith(t, drv, url, time.Millisecond)
}

// setupWith is setup with the first retry's delay.
func setupWith(t *testing.T, drv *drivertest.Driver, url string, retryBase time.Duration) *bundle {
	t.Helper()
	return setupTarget(t, drv, callback.Target{URL: url, Secrets: [][]byte{[]byte(secret)}}, retryBase)
}

// setupTarget is setupWith with agentName's whole target.
func setupTarget(t *testing.T, drv *drivertest.Driver, target callback.Target, retryBase time.Duration) *bundle {
	t.Helper()
	b := drv.Open(t, true)
	b.Store.(*store.Ledger).SetCallbackAgents(agentName)
	reg := prometheus.NewRegistry()
	m := callback.NewMetrics(reg)
	d := callback.New(callback.Config{
		DB: b.Store,
		Render: func(ctx context.Context, cb store.Callback) ([]byte, error) {
			req, err := b.RequestByID(ctx, cb.RequestID)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"id": req.ID, "status": req.Status, "version": req.Version})
		},
		Targets:   map[string]callback.Target{agentName: target},
		Timeout:   2 * time.Second,
		RetryBase: retryBase,
		Metrics:   m,
	})
	return &bundle{b: b, d: d, registry: reg, metrics: m}
}

// rejected inserts a request of agentName and rejects it, which queues one
// request.settled callback.
func rejected(t *testing.T, s store.Store, key string) store.Request {
	t.Helper()
	ctx := context.Background()
	req, _, err := s.InsertRequest(ctx, store.NewRequest{Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: agentName, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := s.Decide(ctx, store.DecideParams{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
		Verdict: store.VerdictReject, DecidedBy: "U1", Via: "slack"}); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	return req
}

// drain runs passes until no delivery is pending. A retry is due a few
// milliseconds after its failure (RetryBase), so between passes that claim
// nothing it polls the backlog, with a deadline.
func (b *bundle) drain(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := b.d.RunOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pending, err := b.b.CountCallbackBacklog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case n == 0 && pending == 0:
			return
		case time.Now().After(deadline):
			t.Fatalf("deliveries did not drain: %d still pending", pending)
		case n == 0:
			<-tick.C // a retry's backoff is running
		}
	}
}

// One transition, one signed delivery of the representation, and nothing
// more once it landed.
func TestDeliveredOncePerTransitionSigned(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		e := newEndpoint(t)
		b := setup(t, drv, e.URL+"/hooks/countersign")
		req := rejected(t, b.b, "wa_cb_once")
		b.drain(t)
		b.drain(t)
		got := e.got()
		if len(got) != 1 {
			t.Fatalf("endpoint received %d callbacks, want 1", len(got))
		}
		r := got[0]
		if r.event != string(store.CallbackSettled) || len(r.delivery) != 36 || !r.signatureOK {
			t.Errorf("callback event %q delivery %q signature ok %v", r.event, r.delivery, r.signatureOK)
		}
		// v2 covers the delivery id and the path: the same body under
		// another delivery id, or at another path, does not verify.
		sent := signature.Request{Method: http.MethodPost, Path: r.path, Delivery: r.delivery}
		if r.path != "/hooks/countersign" || signature.VerifyRequest([]byte(secret), r.signature, sent, r.body, time.Now(), time.Minute) != nil {
			t.Errorf("the callback to %s does not verify as sent: %s", r.path, r.signature)
		}
		for _, replay := range []signature.Request{
			{Method: http.MethodPost, Path: r.path, Delivery: "00000000-0000-4000-8000-000000000000"},
			{Method: http.MethodPost, Path: "/hooks/other", Delivery: r.delivery},
			{Method: http.MethodPost, Path: r.path, IdempotencyKey: r.delivery},
		} {
			if signature.VerifyRequest([]byte(secret), r.signature, replay, r.body, time.Now(), time.Minute) == nil {
				t.Errorf("the callback verifies as %+v", replay)
			}
		}
		var body struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(r.body, &body); err != nil || body.ID != req.ID || body.Status != "rejected" {
			t.Errorf("body %s, %v", r.body, err)
		}
		cb, err := b.b.LatestCallback(context.Background(), req.ID)
		if err != nil || cb.State != store.CallbackDelivered || cb.Attempts != 1 || *cb.LastStatus != 200 || cb.DeliveryID != r.delivery {
			t.Errorf("callback row %+v, %v", cb, err)
		}
		if n := testutil.ToFloat64(b.metrics.Attempts.WithLabelValues(string(store.CallbackSettled), "delivered")); n != 1 {
			t.Errorf("delivered attempts metric = %v, want 1", n)
		}
		if n := testutil.ToFloat64(b.metrics.Backlog); n != 0 {
			t.Errorf("backlog metric = %v, want 0", n)
		}
	})
}

// An agent that answers 500 twice gets the same delivery a third time.
func TestRedeliveredAfterTwoFailures(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		e := newEndpoint(t, 500, 500)
		b := setup(t, drv, e.URL)
		req := rejected(t, b.b, "wa_cb_retry")
		b.drain(t)
		got := e.got()
		if len(got) != 3 {
			t.Fatalf("endpoint received %d callbacks, want 3", len(got))
		}
		for _, r := range got {
			if r.delivery != got[0].delivery || !r.signatureOK {
				t.Errorf("delivery %q (first %q), signature ok %v", r.delivery, got[0].delivery, r.signatureOK)
			}
		}
		cb, err := b.b.LatestCallback(context.Background(), req.ID)
		if err != nil || cb.State != store.CallbackDelivered || cb.Attempts != 3 || *cb.LastStatus != 200 {
			t.Errorf("callback row %+v, %v", cb, err)
		}
		if n := testutil.ToFloat64(b.metrics.Attempts.WithLabelValues(string(store.CallbackSettled), "retry")); n != 2 {
			t.Errorf("retry attempts metric = %v, want 2", n)
		}
	})
}

// A redrive restarts the backoff: after failures have pushed the next
// retry out by doubling delays, the redriven delivery's first failure waits
// only the first delay again.
func TestRedriveRestartsTheBackoff(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		const base, slack = 10 * time.Minute, 5 * time.Second
		e := newEndpoint(t, 500, 500, 500, 500)
		b := setupWith(t, drv, e.URL, base)
		ctx := context.Background()
		req := rejected(t, b.b, "wa_cb_backoff")
		// attempt makes the delivery due, sends it once, and returns its row
		// and how long it now waits.
		attempt := func(want int) time.Duration {
			t.Helper()
			if err := b.b.Exec("UPDATE callbacks SET next_attempt_at = created_at"); err != nil {
				t.Fatal(err)
			}
			if n, err := b.d.RunOnce(ctx); err != nil || n != 1 {
				t.Fatalf("RunOnce = %d, %v", n, err)
			}
			cb, err := b.b.LatestCallback(ctx, req.ID)
			if err != nil || cb.State != store.CallbackPending || cb.Attempts != want {
				t.Fatalf("after attempt %d: %+v, %v", want, cb, err)
			}
			return time.Until(cb.NextAttemptAt)
		}
		if wait := attempt(1); wait < base/2-slack || wait > base+slack {
			t.Errorf("after the first failure the delivery waits %s, want %s to %s", wait, base/2, base)
		}
		attempt(2)
		if wait := attempt(3); wait < 2*base-slack {
			t.Errorf("after the third failure the delivery waits %s, want at least %s", wait, 2*base)
		}
		cb, ok, err := b.b.RedriveCallback(ctx, req.ID)
		if err != nil || !ok || cb.Attempts != 0 || time.Until(cb.NextAttemptAt) > slack {
			t.Fatalf("RedriveCallback = %+v, %v, %v; want attempts 0, due now", cb, ok, err)
		}
		if wait := attempt(1); wait < base/2-slack || wait > base+slack {
			t.Errorf("after the redriven delivery's first failure it waits %s, want %s to %s again", wait, base/2, base)
		}
		if got := e.got(); len(got) != 4 || got[3].delivery != got[0].delivery {
			t.Errorf("the endpoint received %d deliveries; want the same one 4 times", len(got))
		}
	})
}

// A redirect is not followed: the signed body never reaches where it points.
func TestRedirectsAreNotFollowed(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		elsewhere := newEndpoint(t)
		redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
		t.Cleanup(redirect.Close)
		b := setup(t, drv, redirect.URL)
		req := rejected(t, b.b, "wa_cb_redirect")
		if _, err := b.d.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(elsewhere.got()); n != 0 {
			t.Errorf("the redirect target received %d callbacks", n)
		}
		cb, err := b.b.LatestCallback(context.Background(), req.ID)
		if err != nil || cb.State != store.CallbackPending || cb.LastStatus == nil || *cb.LastStatus != http.StatusTemporaryRedirect {
			t.Errorf("callback row %+v, %v", cb, err)
		}
	})
}

// Past its retry window a delivery that keeps failing fails for good.
func TestFailsAfterItsRetryWindow(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		e := newEndpoint(t, 503, 503, 503)
		b := setup(t, drv, e.URL)
		req := rejected(t, b.b, "wa_cb_window")
		if _, err := b.d.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		cb, err := b.b.LatestCallback(context.Background(), req.ID)
		if err != nil || cb.State != store.CallbackPending || cb.GiveUpAt.Sub(cb.CreatedAt) < 24*time.Hour {
			t.Fatalf("after one failure: %+v, %v; want pending with 24 h to go", cb, err)
		}
		if err := b.b.Exec("UPDATE callbacks SET give_up_at = created_at"); err != nil {
			t.Fatal(err)
		}
		b.drain(t)
		if cb, err = b.b.LatestCallback(context.Background(), req.ID); err != nil || cb.State != store.CallbackFailed || cb.Attempts != 2 {
			t.Errorf("after the window: %+v, %v; want failed after 2 attempts", cb, err)
		}
		if n := testutil.ToFloat64(b.metrics.Attempts.WithLabelValues(string(store.CallbackSettled), "failed")); n != 1 {
			t.Errorf("failed attempts metric = %v, want 1", n)
		}
	})
}

func TestTargetValidate(t *testing.T) {
	t.Parallel()
	one := [][]byte{[]byte("s3cr3t-one")}
	for _, c := range []struct {
		target callback.Target
		ok     bool
	}{
		{callback.Target{URL: "https://agent.example/hook", Secrets: one}, true},
		{callback.Target{URL: "http://127.0.0.1:9000/cb", Secrets: one}, true},
		{callback.Target{URL: "https://agent.example/hook", Secrets: [][]byte{[]byte("s3cr3t-old"), []byte("s3cr3t-new")}}, true},
		{callback.Target{URL: "", Secrets: one}, false},
		{callback.Target{URL: "/relative", Secrets: one}, false},
		{callback.Target{URL: "ftp://agent.example/", Secrets: one}, false},
		{callback.Target{URL: "https://user:pw@agent.example/", Secrets: one}, false},
		{callback.Target{URL: "https://agent.example/hook"}, false},
		{callback.Target{URL: "https://agent.example/hook", Secrets: [][]byte{[]byte("s3cr3t-old"), {}}}, false},
	} {
		err := c.target.Validate()
		if (err == nil) != c.ok {
			t.Errorf("Validate(%q, %d secrets) = %v, want ok %v", c.target.URL, len(c.target.Secrets), err, c.ok)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error names a secret: %v", err)
		}
	}
}
