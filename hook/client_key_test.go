package hook

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/intentkey"
	"github.com/countersign/countersign/internal/intentkey/intentkeytest"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// withBodyKey is the published vector's intent with key as its
// idempotency_key.
func withBodyKey(t *testing.T, key string) string {
	t.Helper()
	quoted, err := json.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(vectorBody, `"step": 6`, `"step": 6, "idempotency_key": `+string(quoted), 1)
}

// refusedKey fails t unless r is 422 invalid_request naming field, in words
// that name the Idempotency-Key.
func refusedKey(t *testing.T, r response, field, what string) {
	t.Helper()
	var e wire.ErrorBody
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("%s: error body %s: %v", what, r.body, err)
	}
	if r.status != http.StatusUnprocessableEntity || e.Error.Code != approvals.CodeInvalidRequest || e.Error.Field != field ||
		!strings.Contains(e.Error.Message, "Idempotency-Key") {
		t.Errorf("%s = %d %s, want 422 invalid_request at %s naming the Idempotency-Key", what, r.status, r.body, field)
	}
}

// Every client key of the shared vectors, sent as idempotency_key with the
// intent whose derived key the vectors name: the refused ones are 422 and
// store nothing, the accepted ones are stored under the key as sent.
func TestClientKeyVectorsInTheBody(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		v := intentkeytest.Load(t).ClientKeys
		for _, k := range v.Refused {
			r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(withBodyKey(t, k.Key)), nil)
			refusedKey(t, r, "/idempotency_key", k.Name)
		}
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: 0})
		for _, k := range v.Accepted {
			r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(withBodyKey(t, k.Key)), nil)
			if r.status != http.StatusCreated || r.view(t).Key != k.Key {
				t.Errorf("%s: %q = %d %s, want 201 under the key as sent", k.Name, k.Key, r.status, r.body)
			}
		}
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: len(v.Accepted)})
	})
}

// The header is held to the same rule. Go's HTTP server trims a header
// value's surrounding whitespace before the hook reads it, as a provider's
// does; what is left must still pass.
func TestClientKeyHeader(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		derived := intentkeytest.Load(t).ClientKeys.Derived
		hex := strings.TrimPrefix(derived, approvals.KeyPrefix)
		for _, key := range []string{
			"dispatch 0001", "dispatch\t0001", "dispatch,0001", "dispatch;0001", "dispatch%200001", "ключ-12345",
			"WA_" + hex, "Wa_" + hex, "wA_" + hex, strings.ToUpper(derived), "wa_" + strings.Repeat("0", 64), "wa_imitation",
			"short", strings.Repeat("k", 256),
		} {
			r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Idempotency-Key": key})
			refusedKey(t, r, "Idempotency-Key", "header "+key)
		}
		// The same key in the header and in the body: the header is named.
		r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(withBodyKey(t, "WA_"+hex)), map[string]string{"Idempotency-Key": "WA_" + hex})
		refusedKey(t, r, "Idempotency-Key", "WA_ in both")

		// Two Idempotency-Key headers: a proxy or a provider may read either.
		req, err := http.NewRequest(http.MethodPost, b.server.URL+"/v1/requests", strings.NewReader(vectorBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Add("Idempotency-Key", "dispatch-0001")
		req.Header.Add("Idempotency-Key", "dispatch-0002")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		refusedKey(t, response{status: resp.StatusCode, body: body}, "Idempotency-Key", "two headers")
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: 0})

		for _, c := range intentkey.ClientKeyPunctuation {
			key := "dispatch" + string(c) + "0001"
			r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Idempotency-Key": key})
			if r.status != http.StatusCreated || r.view(t).Key != key {
				t.Errorf("header %q = %d %s, want 201", key, r.status, r.body)
			}
		}
		// A leading space before this intent's own derived key is trimmed by
		// the server, and what is left is the derived key.
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Idempotency-Key": " " + derived})
		if r.status != http.StatusCreated || r.view(t).Key != derived {
			t.Errorf("header with a space before the derived key = %d %s", r.status, r.body)
		}
	})
}

// unknown_tool names the tools the agent may use, in its message and as a
// list.
func TestUnknownToolNamesTheToolsTheAgentMayUse(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(strings.Replace(vectorBody, "billing.credit", "billing.refund", 1)), nil)
		var e wire.ErrorBody
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatal(err)
		}
		want := []string{"billing.credit", "deploy.release"}
		if r.status != http.StatusUnprocessableEntity || e.Error.Code != approvals.CodeUnknownTool ||
			!strings.Contains(e.Error.Message, `Tool "billing.refund" is not configured.`) ||
			!strings.Contains(e.Error.Message, "Tools this agent may use: billing.credit, deploy.release.") ||
			!slices.Equal(e.Error.Tools, want) {
			t.Errorf("unknown tool = %d %s, want 422 unknown_tool naming %v", r.status, r.body, want)
		}
	})
}
