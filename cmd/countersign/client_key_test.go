package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/storetest"
)

// The attack of a client key with whitespace, end to end: agent B sends,
// for a 1-cent write, the key agent A's coming 500.00 write derives with a
// space before it. A provider's HTTP server trims a header value, so had B's
// write been stored and approved, the provider would have kept B's object
// under A's key and answered A's write with it: A's request would end
// succeeded with B's provider_ref, and A's write would never happen. B is
// refused (422) whichever way it sends the key, and A's write happens at the
// provider once, under A's key.
func TestAClientKeyCannotTakeAnotherAgentsWriteAtAProviderThatTrims(t *testing.T) {
	t.Parallel()
	provider := providertest.New()
	// Go's HTTP server already trims a header value's surrounding
	// whitespace, as the provider in the report did; the trim is spelled
	// out so the test does not lean on it.
	trimming := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if keys := r.Header.Values("Idempotency-Key"); len(keys) > 0 {
			r.Header.Set("Idempotency-Key", strings.TrimSpace(keys[0]))
		}
		provider.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		provider.Release()
		trimming.CloseClientConnections()
		trimming.Close()
	})

	const tokenA, tokenB = "agent-a-token-do-not-log", "agent-b-token-do-not-log"
	sumA, sumB := sha256.Sum256([]byte(tokenA)), sha256.Sum256([]byte(tokenB))
	cfg := writeConfig(t, fmt.Sprintf(`
executor:
  dispatch_schedule: "@every 1s"
  reconcile_schedule: "@every 1s"
agents:
  - {name: agent-a, token_sha256: %s}
  - {name: agent-b, token_sha256: %s}
tools:
  billing.credit:
    approvers: [local:reviewer]
    key_aware: true
    dispatch: {url: "%s/credits"}
`, hex.EncodeToString(sumA[:]), hex.EncodeToString(sumB[:]), trimming.URL))
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          cfg,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
	}))
	browser := newBrowserClient()
	call := caller(t, browser, base)
	enterInbox(t, browser, inboxEntry(t, logs))

	const intentA = `{"run_id": "run-a", "step": 3, "tool": "billing.credit", "effect": {"invoice": "inv_a", "amount_cents": 50000, "currency": "USD"}}`
	keyA, err := approvals.Key(approvals.Basis{RunID: "run-a", Step: json.RawMessage(`3`), Tool: "billing.credit",
		Effect: json.RawMessage(`{"invoice": "inv_a", "amount_cents": 50000, "currency": "USD"}`)})
	if err != nil {
		t.Fatal(err)
	}
	intentB := func(key string) string {
		quoted, _ := json.Marshal(key)
		return `{"run_id": "run-b", "step": 1, "tool": "billing.credit", "effect": {"invoice": "inv_b", "amount_cents": 1, "currency": "USD"}, "idempotency_key": ` + string(quoted) + `}`
	}
	asB := map[string]string{"Authorization": "Bearer " + tokenB}
	headerAsB := func(key string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tokenB, "Idempotency-Key": key}
	}
	attempts := []struct {
		what   string
		body   string
		header map[string]string
		field  string
	}{
		{"a space, then A's key, in the body", intentB(" " + keyA), asB, "/idempotency_key"},
		{"A's key, then a space, in the body", intentB(keyA + " "), asB, "/idempotency_key"},
		{"a tab, then A's key, in the body", intentB("\t" + keyA), asB, "/idempotency_key"},
		{"A's key in capitals, in the body", intentB(strings.ToUpper(keyA)), asB, "/idempotency_key"},
		{"a space, then A's key, in the header", strings.Replace(intentB("x"), `, "idempotency_key": "x"`, "", 1), headerAsB(" " + keyA), "Idempotency-Key"},
		{"A's key with WA_, in the header", strings.Replace(intentB("x"), `, "idempotency_key": "x"`, "", 1), headerAsB("WA_" + keyA[3:]), "Idempotency-Key"},
	}
	// Had any been taken, it is approved as a reviewer would approve a
	// 1-cent credit, and reaches the provider before A's write does.
	var taken []postedRequest
	for _, a := range attempts {
		code, body := call(http.MethodPost, "/v1/requests", a.body, a.header)
		var refusal struct {
			Error struct{ Code, Field, Message string } `json:"error"`
		}
		_ = json.Unmarshal(body, &refusal)
		if code != http.StatusUnprocessableEntity || refusal.Error.Code != approvals.CodeInvalidRequest ||
			refusal.Error.Field != a.field || !strings.Contains(refusal.Error.Message, "Idempotency-Key") {
			t.Errorf("B's %s = %d %s, want 422 invalid_request at %s naming the Idempotency-Key", a.what, code, body, a.field)
		}
		if code == http.StatusCreated {
			var created postedRequest
			if err := json.Unmarshal(body, &created); err != nil {
				t.Fatal(err)
			}
			taken = append(taken, created)
		}
	}
	for _, req := range taken {
		approveInInbox(t, call, req)
		waitForExecution(t, call, tokenB, req.Key, logs)
	}

	code, body := call(http.MethodPost, "/v1/requests", intentA, map[string]string{"Authorization": "Bearer " + tokenA})
	var created postedRequest
	if code != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.Key != keyA {
		t.Fatalf("A's intent = %d %s, want 201 under %s", code, body, keyA)
	}
	approveInInbox(t, call, created)
	ref := waitForExecution(t, call, tokenA, keyA, logs)

	if n := provider.Writes(keyA); n != 1 {
		t.Errorf("the provider received %d writes under A's key, want 1", n)
	}
	objects := provider.AllObjects()
	if len(objects) != 1 || objects[0].Key != keyA || !strings.Contains(string(objects[0].Body), `"amount_cents":50000`) {
		var held []string
		for _, o := range objects {
			held = append(held, fmt.Sprintf("%s under %q: %s", o.ID, o.Key, o.Body))
		}
		t.Fatalf("the provider holds %v; want A's write alone, under A's key", held)
	}
	if ref != objects[0].ID {
		t.Errorf("A's request names provider_ref %q; the provider's object for it is %s", ref, objects[0].ID)
	}
}

// approveInInbox approves req in the inbox, with a client that entered it.
func approveInInbox(t *testing.T, call func(method, path, body string, header map[string]string) (int, []byte), req postedRequest) {
	t.Helper()
	form := url.Values{"request_id": {req.ID}, "round": {"1"}, "payload_hash": {req.PayloadHash}, "verdict": {"approve"}}
	if code, page := call(http.MethodPost, "/inbox/decide", form.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusSeeOther {
		t.Fatalf("approving %s in the inbox = %d:\n%s", req.Key, code, page)
	}
}

// waitForExecution long-polls the request named key as the agent holding
// token until its execution succeeded, and returns its provider_ref.
func waitForExecution(t *testing.T, call func(method, path, body string, header map[string]string) (int, []byte), token, key string, logs *syncBuffer) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		code, body := call(http.MethodGet, "/v1/requests/"+url.PathEscape(key)+"?wait=5s", "", map[string]string{"Authorization": "Bearer " + token})
		var view struct {
			Execution *struct {
				State       string `json:"state"`
				ProviderRef string `json:"provider_ref"`
			} `json:"execution"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &view) != nil {
			t.Fatalf("GET %s = %d %s", key, code, body)
		}
		if view.Execution != nil && view.Execution.State == "succeeded" {
			return view.Execution.ProviderRef
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never succeeded: %s\n%s", key, body, logs.String())
		}
	}
}
