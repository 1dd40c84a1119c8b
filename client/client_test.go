package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/countersign/countersign/internal/intentkey/intentkeytest"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

var runs atomic.Int64

// credit is a billing.credit intent of a run of its own.
func credit(amount int) client.Intent {
	return client.Intent{
		RunID: fmt.Sprintf("run-%d-%d", time.Now().UnixNano(), runs.Add(1)), Step: 6, Tool: "billing.credit",
		Effect:  map[string]any{"invoice": "inv_8841", "amount_cents": amount, "currency": "USD"},
		Summary: "Credit invoice inv_8841",
	}
}

// The offline key is the one the hook stores, for every shared vector, and
// Key refuses every refused vector naming its JSON Pointer
// (internal/intentkey/testdata/key-vectors.json).
func TestKeyMatchesTheSharedVectors(t *testing.T) {
	t.Parallel()
	vectors := intentkeytest.Load(t)
	intent := func(v intentkeytest.Vector) client.Intent {
		// Only the basis: summary, reason and requested_for never enter it.
		var fields struct {
			RunID  string          `json:"run_id"`
			Step   json.RawMessage `json:"step"`
			Tool   string          `json:"tool"`
			Effect json.RawMessage `json:"effect"`
		}
		if err := json.Unmarshal(v.Intent, &fields); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		return client.Intent{RunID: fields.RunID, Step: fields.Step, Tool: fields.Tool, Effect: fields.Effect}
	}
	for _, v := range vectors.Keys {
		if got, err := client.Key(intent(v)); err != nil || got != v.Key {
			t.Errorf("%s: Key = %s, %v; want %s", v.Name, got, err, v.Key)
		}
	}
	for _, v := range vectors.Refused {
		if got, err := client.Key(intent(v)); err == nil || !strings.Contains(err.Error(), " at "+v.Pointer+" ") {
			t.Errorf("%s: Key = %q, %v; want a refusal naming %s", v.Name, got, err, v.Pointer)
		}
	}
	// A client key is the key.
	if got, err := client.Key(client.Intent{RunID: "r", Step: 6, Tool: "t", Effect: map[string]any{}, IdempotencyKey: "dispatch-4711-credit"}); err != nil || got != "dispatch-4711-credit" {
		t.Errorf("Key with IdempotencyKey = %s, %v", got, err)
	}
	// Go values, as an agent writes them, give the published vector too.
	got, err := client.Key(client.Intent{RunID: "r-7f3a", Step: 6, Tool: "billing.credit",
		Effect: struct {
			Invoice     string `json:"invoice"`
			AmountCents int    `json:"amount_cents"`
			Currency    string `json:"currency"`
		}{"inv_8841", 4200, "USD"}, Summary: "free text never enters the key"})
	if err != nil || got != "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c" {
		t.Errorf("Key of Go values = %s, %v", got, err)
	}
	for name, bad := range map[string]client.Intent{
		"a float step":       {RunID: "r", Step: 1.5, Tool: "t", Effect: map[string]any{}},
		"an effect list":     {RunID: "r", Step: 1, Tool: "t", Effect: []int{1}},
		"a short client key": {RunID: "r", Step: 1, Tool: "t", Effect: map[string]any{}, IdempotencyKey: "short"},
	} {
		if _, err := client.Key(bad); err == nil {
			t.Errorf("%s: Key accepted it", name)
		}
	}
}

// The client keys of the shared vectors: Key and Request refuse those the
// server refuses, naming the Idempotency-Key and sending nothing, and take
// the others as the key.
func TestClientKeysMatchTheSharedVectors(t *testing.T) {
	t.Parallel()
	v := intentkeytest.Load(t).ClientKeys
	sent := 0
	c := client.New("http://127.0.0.1:9", agentToken, watch(t, func(*http.Request, *http.Response, error) { sent++ }))
	intent := func(key string) client.Intent {
		return client.Intent{RunID: "r-7f3a", Step: 6, Tool: "billing.credit",
			Effect: json.RawMessage(`{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}`), IdempotencyKey: key}
	}
	if derived, err := client.Key(intent("")); err != nil || derived != v.Derived {
		t.Fatalf("the vectors' intent keys as %s, %v; want %s", derived, err, v.Derived)
	}
	for _, k := range v.Refused {
		_, err := client.Key(intent(k.Key))
		var keyErr *client.InvalidKeyError
		if !errors.As(err, &keyErr) || !errors.Is(err, client.ErrInvalidRequest) || !strings.Contains(err.Error(), "Idempotency-Key") {
			t.Errorf("%s: Key = %v, want an *InvalidKeyError naming the Idempotency-Key", k.Name, err)
		}
		if _, err := c.Request(context.Background(), intent(k.Key)); !errors.As(err, &keyErr) {
			t.Errorf("%s: Request = %v, want an *InvalidKeyError", k.Name, err)
		}
	}
	if sent != 0 {
		t.Errorf("%d refused keys were sent", sent)
	}
	for _, k := range v.Accepted {
		if got, err := client.Key(intent(k.Key)); err != nil || got != k.Key {
			t.Errorf("%s: Key = %q, %v; want the key as given", k.Name, got, err)
		}
	}
}

// Do asks, waits through the human decision, and returns the settled
// request; the provider got exactly one write, under the offline key.
func TestDoRequestsAndWaitsUntilSettled(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	created := make(chan struct{})
	var once sync.Once
	c := client.New(g.URL, agentToken, watch(t, func(r *http.Request, resp *http.Response, err error) {
		if err == nil && r.Method == http.MethodPost && r.URL.Path == "/v1/requests" && resp.StatusCode == http.StatusCreated {
			once.Do(func() { close(created) })
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	intent := credit(4200)
	key, err := client.Key(intent)
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan *client.Request, 1)
	go func() {
		req, err := c.Do(ctx, intent)
		if err != nil {
			t.Errorf("Do: %v", err)
		}
		done <- req
	}()
	select {
	case <-created:
	case req := <-done:
		t.Fatalf("Do returned %+v before the hook answered 201", req)
	case <-ctx.Done():
		t.Fatal("the hook never answered Do's request with 201")
	}
	pending, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%s) after the hook created it: %v", key, err)
	}
	if pending.Status != client.StatusPending || pending.Settled {
		t.Fatalf("before the decision: %+v", pending)
	}
	g.approve(pending.ID, pending.PayloadHash)
	req := <-done
	if req == nil || !req.Succeeded() || !req.Settled || req.Key != key || req.Decision == nil || req.Decision.Verdict != "approve" {
		t.Fatalf("Do returned %+v", req)
	}
	if n := g.provider.Writes(key); n != 1 {
		t.Errorf("the provider received %d writes, want 1", n)
	}
	if bad := g.provider.BadSignatures(); bad != 0 {
		t.Errorf("%d dispatches failed client.VerifySignature", bad)
	}
	// The same intent again is the same request, settled: Do answers at once.
	again, err := c.Do(ctx, intent)
	if err != nil || !again.Replayed || again.ID != req.ID || !again.Succeeded() {
		t.Fatalf("the same intent again: %+v, %v", again, err)
	}
}

// watch is a client option that sends through a transport of the test's
// own and calls seen with each answer or network error, so a test waits on
// what the client did rather than for a while.
func watch(t *testing.T, seen func(r *http.Request, resp *http.Response, err error)) client.Option {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(transport.CloseIdleConnections)
	return client.WithHTTPClient(&http.Client{Timeout: 90 * time.Second, Transport: watcher{transport, seen}})
}

type watcher struct {
	next http.RoundTripper
	seen func(r *http.Request, resp *http.Response, err error)
}

func (w watcher) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(r)
	w.seen(r, resp, err)
	return resp, err
}

// A serve process killed under an agent, and a Do that starts while it is
// down: the client retries the same intent until serve is back, lands on the
// same key, and the write happens once.
func TestDoRetriesThroughACrashUnderTheSameKey(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	// Straight to serve: there is no proxy to answer while it is down.
	var failures atomic.Int64
	retried := make(chan struct{})
	c := client.New("http://"+g.addr, agentToken, client.WithBackoff(20*time.Millisecond, 200*time.Millisecond),
		watch(t, func(_ *http.Request, _ *http.Response, err error) {
			if err != nil && failures.Add(1) == 2 {
				close(retried)
			}
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	intent := credit(1500)
	first, err := c.Request(ctx, intent)
	if err != nil || first.Replayed {
		t.Fatalf("Request: %+v, %v", first, err)
	}

	g.kill()
	done := make(chan *client.Request, 1)
	go func() {
		req, err := c.Do(ctx, intent)
		if err != nil {
			t.Errorf("Do: %v", err)
		}
		done <- req
	}()
	// Serve comes back once Do has met the outage and retried at least once.
	select {
	case <-retried:
	case req := <-done:
		t.Fatalf("Do returned %+v while serve was down", req)
	case <-ctx.Done():
		t.Fatalf("Do failed %d times while serve was down, want 2", failures.Load())
	}
	g.start()
	g.approve(first.ID, first.PayloadHash)
	req := <-done
	if req == nil || req.ID != first.ID || req.Key != first.Key || !req.Succeeded() {
		t.Fatalf("Do after the crash returned %+v, want the first request, succeeded", req)
	}
	if n := g.provider.Writes(first.Key); n != 1 {
		t.Errorf("the provider received %d writes, want 1", n)
	}
}

// Every refusal is an *APIError that matches its sentinel, with the status,
// the words and the field.
func TestTypedErrors(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	c := client.New(g.URL, agentToken)
	ctx := context.Background()

	_, err := c.Request(ctx, credit(0))
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrInvalidEffect) || !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity || apiErr.Field != "/effect/amount_cents" || !strings.Contains(apiErr.Message, "minimum") {
		t.Errorf("an effect below the schema's minimum: %v (%+v)", err, apiErr)
	}
	owned := credit(100)
	owned.IdempotencyKey = fmt.Sprintf("agent-own-key-%d", runs.Add(1))
	if _, err := c.Request(ctx, owned); err != nil {
		t.Fatal(err)
	}
	owned.Effect = map[string]any{"invoice": "inv_8841", "amount_cents": 200, "currency": "USD"}
	if _, err := c.Request(ctx, owned); !errors.Is(err, client.ErrKeyReused) || !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("the same key for another write: %v", err)
	}
	unknown := credit(100)
	unknown.Tool = "db.drop"
	if _, err := c.Request(ctx, unknown); !errors.Is(err, client.ErrUnknownTool) || !errors.As(err, &apiErr) ||
		!slices.Equal(apiErr.Tools, []string{"billing.credit", "crm.note"}) || !strings.Contains(apiErr.Message, "billing.credit, crm.note") {
		t.Errorf("an unknown tool: %v (%+v)", err, apiErr)
	}
	if _, err := client.New(g.URL, "not-a-token").Tools(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("a bad token: %v", err)
	}
	if _, err := c.Get(ctx, "wa_nothing"); !errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrKeyReused) {
		t.Errorf("a missing request: %v", err)
	}
	pending, err := c.Request(ctx, credit(300))
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := c.Cancel(ctx, pending.Key)
	if err != nil || cancelled.Status != client.StatusCancelled || !cancelled.Settled {
		t.Fatalf("Cancel: %+v, %v", cancelled, err)
	}
	if _, err := c.Cancel(ctx, pending.Key); !errors.Is(err, client.ErrAlreadyDecided) {
		t.Errorf("a second cancel: %v", err)
	}
	// Wait on a settled request answers at once.
	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if got, err := c.Wait(waitCtx, pending.ID); err != nil || got.Status != client.StatusCancelled {
		t.Errorf("Wait on a cancelled request: %+v, %v", got, err)
	}
}

// Every error code the OpenAPI document names has a sentinel in the client.
func TestEveryDocumentedCodeHasASentinel(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../hook/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas struct {
				ErrorCode struct {
					Enum []string `json:"enum"`
				} `json:"ErrorCode"`
			} `json:"schemas"`
		} `json:"components"`
	}
	decodeJSON(t, raw, &doc)
	if len(doc.Components.Schemas.ErrorCode.Enum) < 10 {
		t.Fatalf("the document names %d codes", len(doc.Components.Schemas.ErrorCode.Enum))
	}
	matched := map[error]string{}
	for _, code := range doc.Components.Schemas.ErrorCode.Enum {
		e := &client.APIError{Code: code}
		found := 0
		for _, sentinel := range client.Sentinels() {
			if errors.Is(e, sentinel) {
				found++
				if other, dup := matched[sentinel]; dup {
					t.Errorf("%s and %s match the same sentinel", other, code)
				}
				matched[sentinel] = code
			}
		}
		if found != 1 {
			t.Errorf("code %s matches %d sentinels, want 1", code, found)
		}
	}
}

// Tools lists what the agent may request: description, reversibility,
// policy and the effect schema.
func TestToolsListsWhatTheAgentMayRequest(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	tools, err := client.New(g.URL, agentToken).Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name != "billing.credit" || tools[1].Name != "crm.note" {
		t.Fatalf("tools = %+v", tools)
	}
	credit, note := tools[0], tools[1]
	var schema struct {
		Required []string `json:"required"`
	}
	decodeJSON(t, credit.EffectSchema, &schema)
	if credit.Description != "Credit an invoice, in cents." || credit.Reversible || credit.Policy.Approvals != 1 ||
		len(credit.Policy.Approvers) != 1 || strings.Join(schema.Required, ",") != "invoice,amount_cents,currency" {
		t.Errorf("billing.credit = %+v", credit)
	}
	if !note.Reversible || note.EffectSchema != nil || note.Description != "" {
		t.Errorf("crm.note = %+v", note)
	}
}
