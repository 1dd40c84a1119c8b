package hook

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

const vectorBody = `{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit",
 "effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"},
 "summary": "Credit 42.00 USD to inv_8841",
 "reason": "customer reported duplicate charge per ticket 5512",
 "requested_for": "U024BE7LH"}`

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorCode(t *testing.T) (code, field string) {
	t.Helper()
	var e wire.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if e.Error.Message == "" {
		t.Errorf("error body %s has no message", r.body)
	}
	return e.Error.Code, e.Error.Field
}

func (r response) view(t *testing.T) wire.Request {
	t.Helper()
	var v wire.Request
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("view %s: %v", r.body, err)
	}
	return v
}

func (b *bundle) do(t *testing.T, method, path, token string, body io.Reader, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, b.server.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// withoutRequestID is an error body with its request_id blanked: the one
// part of a refusal that differs on every request, checked on its own
// (TestEveryAnswerCarriesARequestID).
func withoutRequestID(t *testing.T, body []byte) string {
	t.Helper()
	var e map[string]map[string]any
	if err := json.Unmarshal(body, &e); err != nil || e["error"] == nil {
		t.Fatalf("not an error body: %s", body)
	}
	if id, _ := e["error"]["request_id"].(string); !strings.HasPrefix(id, "req_") {
		t.Errorf("error body without a request_id: %s", body)
	}
	e["error"]["request_id"] = ""
	out, _ := json.Marshal(e)
	return string(out)
}

func (b *bundle) post(t *testing.T, body string) response {
	return b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(body), nil)
}

func TestHookCreateAndReplay(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		first := b.post(t, vectorBody)
		if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("create = %d %s", first.status, first.body)
		}
		v := first.view(t)
		if v.Key != "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c" || v.KeyShort != "wa_d0290121a…634c" ||
			v.Status != wire.StatusPending || v.Decision != nil || v.Execution != nil || string(v.Step) != "6" ||
			string(v.Effect) != `{"amount_cents":4200,"currency":"USD","invoice":"inv_8841"}` || !strings.HasPrefix(v.PayloadHash, "sha256:") {
			t.Errorf("view = %+v", v)
		}
		// Same intent, other free text and member order: a replay.
		replayBody := `{"effect": {"currency": "USD", "amount_cents": 4200, "invoice": "inv_8841"}, "tool": "billing.credit",
			"step": 6, "run_id": "r-7f3a", "summary": "phrased differently"}`
		again := b.post(t, replayBody)
		if again.status != http.StatusOK || again.header.Get("Idempotent-Replayed") != "true" || again.view(t).ID != v.ID {
			t.Fatalf("replay = %d %s %s", again.status, again.header, again.body)
		}
		if again.view(t).Summary != "Credit 42.00 USD to inv_8841" {
			t.Errorf("a replay must return the stored request, got summary %q", again.view(t).Summary)
		}
		// Step "6" is another step, so another request.
		if r := b.post(t, strings.Replace(vectorBody, `"step": 6`, `"step": "6"`, 1)); r.status != http.StatusCreated {
			t.Errorf("string step = %d, want 201", r.status)
		}
	})
}

func TestHookClientKey(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		hdr := map[string]string{"Idempotency-Key": "dispatch-inv_8841-01"}
		r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), hdr)
		if r.status != http.StatusCreated || r.view(t).Key != "dispatch-inv_8841-01" {
			t.Fatalf("client key = %d %s", r.status, r.body)
		}
		other := strings.Replace(vectorBody, "4200", "4300", 1)
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(other), hdr)
		if code, _ := r.errorCode(t); r.status != http.StatusConflict || code != approvals.CodeKeyReused {
			t.Fatalf("reuse = %d %s", r.status, r.body)
		}
		got := b.do(t, http.MethodGet, "/v1/requests/dispatch-inv_8841-01", testToken, nil, nil)
		if got.status != http.StatusOK || !strings.Contains(string(got.view(t).Effect), `"amount_cents":4200`) {
			t.Fatalf("original after 409 = %d %s", got.status, got.body)
		}
		bodyKey := strings.Replace(vectorBody, `"step": 6`, `"step": 6, "idempotency_key": "another-key-123"`, 1)
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(bodyKey), hdr)
		if code, field := r.errorCode(t); r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest || field != "Idempotency-Key" {
			t.Errorf("header and body keys differ = %d %s", r.status, r.body)
		}
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Idempotency-Key": "short"})
		if code, _ := r.errorCode(t); r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest {
			t.Errorf("short header key = %d %s", r.status, r.body)
		}
	})
}

// Every row of the error table in README.md's "Agent API".
func TestHookErrorTable(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		tests := []struct {
			name   string
			token  string
			body   string
			status int
			code   string
			field  string
		}{
			{"unknown tool", testToken, strings.Replace(vectorBody, "billing.credit", "db.drop", 1), 422, approvals.CodeUnknownTool, ""},
			{"missing run_id", testToken, strings.Replace(vectorBody, `"run_id": "r-7f3a",`, "", 1), 422, approvals.CodeInvalidRequest, "/run_id"},
			{"missing step", testToken, strings.Replace(vectorBody, `"step": 6,`, "", 1), 422, approvals.CodeInvalidRequest, "/step"},
			{"missing effect", testToken, `{"run_id":"r","step":1,"tool":"billing.credit"}`, 422, approvals.CodeInvalidRequest, "/effect"},
			{"empty tool", testToken, strings.Replace(vectorBody, `"billing.credit"`, `""`, 1), 422, approvals.CodeInvalidRequest, "/tool"},
			{"run_id not a string", testToken, strings.Replace(vectorBody, `"r-7f3a"`, `7`, 1), 422, approvals.CodeInvalidRequest, "/run_id"},
			{"step a float", testToken, strings.Replace(vectorBody, `"step": 6`, `"step": 6.5`, 1), 422, approvals.CodeInvalidRequest, "/step"},
			{"step an object", testToken, strings.Replace(vectorBody, `"step": 6`, `"step": {}`, 1), 422, approvals.CodeInvalidRequest, "/step"},
			{"summary not a string", testToken, strings.Replace(vectorBody, `"Credit 42.00 USD to inv_8841"`, `["x"]`, 1), 422, approvals.CodeInvalidRequest, "/summary"},
			{"unknown top-level field", testToken, strings.Replace(vectorBody, `"step": 6,`, `"step": 6, "model": "gpt",`, 1), 422, approvals.CodeInvalidRequest, "/model"},
			{"effect not an object", testToken, strings.Replace(vectorBody, `{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}`, `[1,2]`, 1), 422, approvals.CodeInvalidRequest, "/effect"},
			{"effect a string", testToken, strings.Replace(vectorBody, `{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}`, `"credit it"`, 1), 422, approvals.CodeInvalidRequest, "/effect"},
			{"duplicate top-level name", testToken, strings.Replace(vectorBody, `"step": 6,`, `"step": 6, "step": 7,`, 1), 422, approvals.CodeInvalidRequest, "/step"},
			{"duplicate name in effect", testToken, strings.Replace(vectorBody, `"amount_cents": 4200,`, `"amount_cents": 4200, "amount_cents": 1,`, 1), 422, approvals.CodeInvalidRequest, "/effect/amount_cents"},
			{"duplicate name deep in an array", testToken, strings.Replace(vectorBody, `"currency": "USD"}`, `"currency": "USD", "lines": [{"a": 1}, {"b": 1, "b": 2}]}`, 1), 422, approvals.CodeInvalidRequest, "/effect/lines/1/b"},
			{"integer too large to be exact", testToken, strings.Replace(vectorBody, `4200`, `12345678901234567890`, 1), 422, approvals.CodeInvalidRequest, "/effect/amount_cents"},
			{"body an array", testToken, `[1]`, 422, approvals.CodeInvalidRequest, ""},
			{"malformed JSON", testToken, `{"run_id": "r-7f3a",`, 400, approvals.CodeMalformedJSON, ""},
			{"trailing garbage", testToken, vectorBody + ` {}`, 400, approvals.CodeMalformedJSON, ""},
			{"not UTF-8", testToken, strings.Replace(vectorBody, "inv_8841", "inv_\xff", 1), 400, approvals.CodeMalformedJSON, ""},
			{"empty body", testToken, ``, 400, approvals.CodeMalformedJSON, ""},
			{"no token", "", vectorBody, 401, approvals.CodeUnauthorized, ""},
			{"bad token", "not-the-token", vectorBody, 401, approvals.CodeUnauthorized, ""},
			{"a member name with / and ~", testToken, strings.Replace(vectorBody, `"currency": "USD"}`, `"currency": "USD", "a/b~c": 1, "a/b~c": 2}`, 1), 422, approvals.CodeInvalidRequest, "/effect/a~1b~0c"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := b.do(t, http.MethodPost, "/v1/requests", tt.token, strings.NewReader(tt.body), nil)
				code, field := r.errorCode(t)
				if r.status != tt.status || code != tt.code || field != tt.field {
					t.Errorf("= %d %s field %q, want %d %s field %q (%s)", r.status, code, field, tt.status, tt.code, tt.field, r.body)
				}
			})
		}
		if got := b.count(t, `SELECT count(*) FROM requests`); got != 0 {
			t.Errorf("requests stored by refused bodies = %d", got)
		}
	})
}

func TestHookBodyLimit(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		big := `{"run_id":"r","step":1,"tool":"billing.credit","effect":{"pad":"` + strings.Repeat("x", approvals.MaxBodyBytes) + `"}}`
		r := b.post(t, big)
		if code, _ := r.errorCode(t); r.status != http.StatusRequestEntityTooLarge || code != approvals.CodeTooLarge {
			t.Errorf("declared length = %d %s", r.status, r.body)
		}
		// Without a Content-Length (chunked), the reader stops at the limit.
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, io.MultiReader(strings.NewReader(big)), nil)
		if code, _ := r.errorCode(t); r.status != http.StatusRequestEntityTooLarge || code != approvals.CodeTooLarge {
			t.Errorf("chunked = %d %s", r.status, r.body)
		}
	})
}

func TestHookGetAndCancel(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		v := b.post(t, vectorBody).view(t)
		for _, ref := range []string{v.ID, v.Key} {
			if r := b.do(t, http.MethodGet, "/v1/requests/"+ref, testToken, nil, nil); r.status != 200 || r.view(t).ID != v.ID {
				t.Errorf("GET %s = %d", ref, r.status)
			}
		}
		r := b.do(t, http.MethodGet, "/v1/requests/wa_nope", testToken, nil, nil)
		if code, _ := r.errorCode(t); r.status != 404 || code != approvals.CodeNotFound {
			t.Errorf("GET unknown = %d %s", r.status, r.body)
		}
		if r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key, "", nil, nil); r.status != 401 {
			t.Errorf("GET without token = %d", r.status)
		}
		r = b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=2m", testToken, nil, nil)
		if code, _ := r.errorCode(t); r.status != 422 || code != approvals.CodeInvalidRequest {
			t.Errorf("wait=2m = %d %s", r.status, r.body)
		}

		r = b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/cancel", testToken, nil, nil)
		if r.status != 200 || r.view(t).Status != wire.StatusCancelled {
			t.Fatalf("cancel = %d %s", r.status, r.body)
		}
		r = b.do(t, http.MethodPost, "/v1/requests/"+v.Key+"/cancel", testToken, nil, nil)
		if code, _ := r.errorCode(t); r.status != 409 || code != approvals.CodeAlreadyDecided {
			t.Errorf("cancel again = %d %s", r.status, r.body)
		}
		// A replay after cancel returns the cancelled request.
		if r := b.post(t, vectorBody); r.status != 200 || r.view(t).Status != wire.StatusCancelled {
			t.Errorf("replay after cancel = %d %s", r.status, r.body)
		}
	})
}

func TestHookLongPollWakesOnDecision(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		v := b.post(t, vectorBody).view(t)
		req, err := b.svc.Get(b.ctx, billingAgent, v.ID)
		if err != nil {
			t.Fatal(err)
		}

		done := make(chan response, 1)
		start := time.Now()
		go func() {
			done <- b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=30s", testToken, nil, nil)
		}()
		// Decide only once the poll is waiting, so the wake-up comes from NOTIFY.
		deadline := time.Now().Add(10 * time.Second)
		for !b.hasWaiter(req.ID) {
			if time.Now().After(deadline) {
				t.Fatal("the long-poll never subscribed")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := b.svc.Decide(b.ctx, approve(req, approverA)); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-done:
			got := r.view(t)
			if r.status != 200 || got.Status != wire.StatusApproved || got.Decision == nil || got.Decision.By != approverA ||
				got.Execution == nil || got.Execution.State != wire.ExecReady {
				t.Errorf("long-poll answer = %d %s", r.status, r.body)
			}
			if waited := time.Since(start); waited > 10*time.Second {
				t.Errorf("long-poll took %s; it should wake on the change", waited)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("long-poll did not return after the decision")
		}
	})
}

func TestHookLongPollTimesOutUnchanged(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		v := b.post(t, vectorBody).view(t)
		start := time.Now()
		r := b.do(t, http.MethodGet, "/v1/requests/"+v.Key+"?wait=1s", testToken, nil, nil)
		if r.status != 200 || r.view(t).Status != wire.StatusPending {
			t.Fatalf("= %d %s", r.status, r.body)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Errorf("returned after %s, before the wait ended", waited)
		}
	})
}

func TestHookRepresentationHasContractFields(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		r := b.post(t, vectorBody)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(r.body, &fields); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"id", "key", "key_short", "status", "run_id", "step", "tool", "effect", "summary", "reason",
			"payload_hash", "created_at", "expires_at", "decision", "execution"} {
			if _, ok := fields[name]; !ok {
				t.Errorf("representation lacks %q: %s", name, r.body)
			}
		}
		if !bytes.Equal(fields["decision"], []byte("null")) || !bytes.Equal(fields["execution"], []byte("null")) {
			t.Errorf("decision/execution of a new request must be null: %s", r.body)
		}
		for _, name := range []string{"created_at", "expires_at"} {
			var ts string
			if err := json.Unmarshal(fields[name], &ts); err != nil {
				t.Fatal(err)
			}
			if _, err := time.Parse(time.RFC3339, ts); err != nil {
				t.Errorf("%s = %s is not RFC 3339", name, ts)
			}
		}
	})
}

func TestHookConcurrentIdenticalPostsGiveOneRequest(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		const n = 64
		results := make([]response, n)
		together(n, func(i int) { results[i] = b.post(t, vectorBody) })
		created := 0
		id := results[0].view(t).ID
		for i, r := range results {
			switch r.status {
			case http.StatusCreated:
				created++
			case http.StatusOK:
				if r.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("post %d: 200 without Idempotent-Replayed", i)
				}
			default:
				t.Fatalf("post %d = %d %s", i, r.status, r.body)
			}
			if got := r.view(t).ID; got != id {
				t.Errorf("post %d got id %s, post 0 got %s", i, got, id)
			}
		}
		if created != 1 {
			t.Errorf("%d posts answered 201, want 1", created)
		}
		b.expectCounts(t, map[string]int{
			`SELECT count(*) FROM requests`: 1,
			`SELECT count(*) FROM outbox`:   1,
		})
	})
}
