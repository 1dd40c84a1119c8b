package hook

import (
	"bufio"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

var requestIDPattern = regexp.MustCompile(`^req_[0-9a-f]{24}$`)

// Every answer, served or refused, carries a fresh Request-Id; an error body
// carries the same one, and the request's log lines name it.
func TestEveryAnswerCarriesARequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seen := map[string]bool{}
	for _, call := range []struct {
		method, path, token, body string
		status                    int
	}{
		{http.MethodPost, "/v1/requests", testToken, vectorBody, http.StatusCreated},
		{http.MethodGet, "/v1/tools", testToken, "", http.StatusOK},
		{http.MethodGet, "/v1/openapi.json", "", "", http.StatusOK},
		{http.MethodGet, "/v1/requests/wa_nothing", testToken, "", http.StatusNotFound},
		{http.MethodPost, "/v1/requests", testToken, `{"run_id":`, http.StatusBadRequest},
		{http.MethodGet, "/v1/tools", "", "", http.StatusUnauthorized},
		{http.MethodGet, "/v1/nowhere", testToken, "", http.StatusNotFound},
		{http.MethodDelete, "/v1/tools", testToken, "", http.StatusMethodNotAllowed},
	} {
		var body *strings.Reader
		if call.body != "" {
			body = strings.NewReader(call.body)
		}
		var r response
		if body != nil {
			r = b.do(t, call.method, call.path, call.token, body, nil)
		} else {
			r = b.do(t, call.method, call.path, call.token, nil, nil)
		}
		id := r.header.Get("Request-Id")
		if r.status != call.status || !requestIDPattern.MatchString(id) || seen[id] {
			t.Errorf("%s %s = %d, Request-Id %q (want %d and a fresh req_ id)", call.method, call.path, r.status, id, call.status)
			continue
		}
		seen[id] = true
		if r.status >= 400 {
			var e wire.ErrorBody
			if err := json.Unmarshal(r.body, &e); err != nil || e.Error.RequestID != id {
				t.Errorf("%s %s: error.request_id %q, header %q (%s)", call.method, call.path, e.Error.RequestID, id, r.body)
			}
		}
		if !loggedWith(t, b.logs.String(), id) {
			t.Errorf("%s %s: no log line names %s", call.method, call.path, id)
		}
	}
	// The intake's own line ("request created") names the request too.
	created := false
	scanner := bufio.NewScanner(strings.NewReader(b.logs.String()))
	for scanner.Scan() {
		var line map[string]any
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line["msg"] == "request created" {
			id, _ := line["http_request_id"].(string)
			created = requestIDPattern.MatchString(id)
		}
	}
	if !created {
		t.Errorf("the request created line names no request id:\n%s", b.logs.String())
	}
}

func loggedWith(t *testing.T, logs, id string) bool {
	t.Helper()
	scanner := bufio.NewScanner(strings.NewReader(logs))
	for scanner.Scan() {
		var line map[string]any
		if json.Unmarshal(scanner.Bytes(), &line) == nil && line["http_request_id"] == id {
			return true
		}
	}
	return false
}

// Unknown routes, wrong methods and HEAD answer the error envelope, with
// Allow on a 405, and change nothing.
func TestUnknownRoutesAndMethodsAnswerTheEnvelope(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		key := b.post(t, vectorBody).view(t).Key
		for _, call := range []struct {
			method, path, code, allow string
		}{
			{http.MethodGet, "/v1/nowhere", approvals.CodeNotFound, ""},
			{http.MethodGet, "/v1/requests/" + key + "/", approvals.CodeNotFound, ""},
			{http.MethodPost, "/v1/requests/" + key + "/approve", approvals.CodeNotFound, ""},
			{http.MethodDelete, "/v1/requests/" + key, approvals.CodeMethodNotAllowed, "GET"},
			{http.MethodPut, "/v1/requests", approvals.CodeMethodNotAllowed, "GET, POST"},
			{http.MethodHead, "/v1/requests", approvals.CodeMethodNotAllowed, "GET, POST"},
			{http.MethodGet, "/v1/requests/" + key + "/cancel", approvals.CodeMethodNotAllowed, "POST"},
			{http.MethodPost, "/v1/tools", approvals.CodeMethodNotAllowed, "GET"},
			{http.MethodHead, "/v1/requests/" + key, approvals.CodeMethodNotAllowed, "GET"},
			{http.MethodHead, "/v1/openapi.json", approvals.CodeMethodNotAllowed, "GET"},
		} {
			r := b.do(t, call.method, call.path, testToken, nil, nil)
			status := Status(call.code)
			if r.status != status || r.header.Get("Allow") != call.allow || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("%s %s = %d Allow %q, want %d Allow %q", call.method, call.path, r.status, r.header.Get("Allow"), status, call.allow)
				continue
			}
			if call.method == http.MethodHead {
				continue // no body comes back to a HEAD
			}
			if code, _ := r.errorCode(t); code != call.code {
				t.Errorf("%s %s: code %q, want %q (%s)", call.method, call.path, code, call.code, r.body)
			}
		}
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: 1, `SELECT count(*) FROM requests WHERE status = 'pending'`: 1})
	})
}

// RFC 6750: 401 carries the Bearer challenge, with invalid_token when a
// token was sent, and the scheme is matched whatever its case.
func TestBearerChallengeAndScheme(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		authorization string
		status        int
		challenge     string
	}{
		{"", http.StatusUnauthorized, `Bearer realm="countersign"`},
		{"Bearer wrong-token", http.StatusUnauthorized, `Bearer realm="countersign", error="invalid_token"`},
		{"Basic " + testToken, http.StatusUnauthorized, `Bearer realm="countersign", error="invalid_token"`},
		{"Bearer", http.StatusUnauthorized, `Bearer realm="countersign", error="invalid_token"`},
		{"Bearer " + testToken, http.StatusOK, ""},
		{"bearer " + testToken, http.StatusOK, ""},
		{"BEARER  " + testToken, http.StatusOK, ""},
	} {
		r := b.do(t, http.MethodGet, "/v1/tools", "", nil, map[string]string{"Authorization": tc.authorization})
		if r.status != tc.status || r.header.Get("WWW-Authenticate") != tc.challenge {
			t.Errorf("Authorization %q = %d WWW-Authenticate %q, want %d %q", tc.authorization, r.status, r.header.Get("WWW-Authenticate"), tc.status, tc.challenge)
		}
	}
}

// A body not sent as application/json is 415 and stores nothing; charset
// and other parameters are allowed.
func TestIntakeTakesOnlyJSON(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		for _, contentType := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonx", "application/json-patch+json", "", ";;"} {
			r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Content-Type": contentType})
			if code, _ := r.errorCode(t); r.status != http.StatusUnsupportedMediaType || code != approvals.CodeUnsupportedMediaType {
				t.Errorf("Content-Type %q = %d %s", contentType, r.status, r.body)
			}
		}
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: 0})
		for i, contentType := range []string{"application/json; charset=utf-8", "Application/JSON"} {
			body := strings.Replace(vectorBody, `"step": 6`, `"step": `+string(rune('7'+i)), 1)
			if r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(body), map[string]string{"Content-Type": contentType}); r.status != http.StatusCreated {
				t.Errorf("Content-Type %q = %d %s", contentType, r.status, r.body)
			}
		}
	})
}

// The wa_ prefix is the derived keys': a client key with it is taken only
// when it is the key the intent derives.
func TestClientKeysMayNotImitateDerivedKeys(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		derived, err := approvals.Key(approvals.Basis{RunID: "r-7f3a", Step: json.RawMessage("6"), Tool: "billing.credit",
			Effect: json.RawMessage(`{"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}`)})
		if err != nil {
			t.Fatal(err)
		}
		fake := "wa_" + strings.Repeat("0", 64)
		r := b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Idempotency-Key": fake})
		if code, field := r.errorCode(t); r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest || field != "Idempotency-Key" {
			t.Errorf("header wa_ key not derived = %d %s", r.status, r.body)
		}
		inBody := strings.Replace(vectorBody, `"step": 6`, `"step": 6, "idempotency_key": "wa_imitation"`, 1)
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(inBody), nil)
		if code, field := r.errorCode(t); r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest || field != "/idempotency_key" {
			t.Errorf("body wa_ key not derived = %d %s", r.status, r.body)
		}
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: 0})
		// The derived key itself, sent by an agent that computed it offline.
		r = b.do(t, http.MethodPost, "/v1/requests", testToken, strings.NewReader(vectorBody), map[string]string{"Idempotency-Key": derived})
		if r.status != http.StatusCreated || r.view(t).Key != derived {
			t.Fatalf("the derived key as the client key = %d %s", r.status, r.body)
		}
		if again := b.post(t, vectorBody); again.status != http.StatusOK || again.view(t).Key != derived {
			t.Errorf("the same intent without a key = %d %s, want the replay of %s", again.status, again.body, derived)
		}
	})
}

// invalid_effect lists every violation, the first also as field and message.
func TestInvalidEffectListsEveryViolation(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withSchema(t)
		body := `{"run_id":"r-many","step":1,"tool":"billing.credit","effect":{"invoice":"bill","amount_cents":"4200","currency":"GBP","lines":[{"qty":2}]}}`
		r := b.post(t, body)
		var e wire.ErrorBody
		if err := json.Unmarshal(r.body, &e); err != nil || r.status != http.StatusUnprocessableEntity || e.Error.Code != approvals.CodeInvalidEffect {
			t.Fatalf("= %d %s", r.status, r.body)
		}
		var fields []string
		for _, v := range e.Error.Errors {
			fields = append(fields, v.Field)
			if !strings.Contains(v.Message, v.Field) {
				t.Errorf("violation %s: message %q does not name it", v.Field, v.Message)
			}
		}
		want := []string{"/effect/amount_cents", "/effect/currency", "/effect/invoice", "/effect/lines/0/sku"}
		if strings.Join(fields, " ") != strings.Join(want, " ") {
			t.Errorf("violations at %v, want %v", fields, want)
		}
		if len(e.Error.Errors) > 0 && (e.Error.Field != e.Error.Errors[0].Field || e.Error.Message != e.Error.Errors[0].Message) {
			t.Errorf("field %q / message %q are not the first violation %+v", e.Error.Field, e.Error.Message, e.Error.Errors[0])
		}
		b.expectCounts(t, map[string]int{`SELECT count(*) FROM requests`: 0})
	})
}
