package hook

import (
	"errors"
	"fmt"
	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store/drivertest"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postBody posts an intent without failing the test, for use off the test's
// goroutine.
func (b *bundle) postBody(body string) (status int, respBody []byte, err error) {
	req, err := http.NewRequest(http.MethodPost, b.server.URL+"/v1/requests", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	respBody, err = io.ReadAll(resp.Body)
	return resp.StatusCode, respBody, err
}

// nulIntents are intents with U+0000 in one place each, and the field the
// refusal must name.
var nulIntents = []struct{ field, body string }{
	{"/summary", `{"run_id":"r-nul","step":1,"tool":"billing.credit","effect":{"a":1},"summary":"credit\u0000 it"}`},
	{"/reason", `{"run_id":"r-nul","step":2,"tool":"billing.credit","effect":{"a":1},"reason":"\u0000"}`},
	{"/run_id", `{"run_id":"r-\u0000","step":3,"tool":"billing.credit","effect":{"a":1}}`},
	{"/step", `{"run_id":"r-nul","step":"s\u0000","tool":"billing.credit","effect":{"a":1}}`},
	{"/tool", `{"run_id":"r-nul","step":5,"tool":"billing.credit\u0000","effect":{"a":1}}`},
	{"/requested_for", `{"run_id":"r-nul","step":6,"tool":"billing.credit","effect":{"a":1},"requested_for":"U0\u0000"}`},
	{"/idempotency_key", `{"run_id":"r-nul","step":7,"tool":"billing.credit","effect":{"a":1},"idempotency_key":"key-\u0000-0001"}`},
	{"/effect/invoice", `{"run_id":"r-nul","step":8,"tool":"billing.credit","effect":{"invoice":"inv_\u0000"}}`},
	{"/effect/lines/1", `{"run_id":"r-nul","step":9,"tool":"billing.credit","effect":{"lines":[{"a":1},{"b\u0000":1}]}}`},
	{"/summary", `{"run_id":"r-nul","step":10,"tool":"billing.credit","effect":{"a":1},"summary":"\u0000"}`},
}

// One intent can never fail another: posts with U+0000 are refused alone,
// and every valid post that shared their group commit is stored.
func TestHookNULIntentsFailOnlyThemselves(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		const valid = 40
		n := valid + len(nulIntents)
		type result struct {
			status int
			body   []byte
			err    error
		}
		results := make([]result, n)
		together(n, func(i int) {
			// Every fifth post carries a NUL, so they spread across the batches.
			body := fmt.Sprintf(`{"run_id":"r-ok","step":%d,"tool":"billing.credit","effect":{"invoice":"inv_%d"},"summary":"credit %d"}`, i, i, i)
			if i%5 == 4 {
				body = nulIntents[i/5].body
			}
			status, respBody, err := b.postBody(body)
			results[i] = result{status, respBody, err}
		})
		created, refused := 0, 0
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("post %d: %v", i, r.err)
			}
			resp := response{status: r.status, body: r.body}
			if i%5 != 4 {
				if r.status != http.StatusCreated {
					t.Errorf("valid post %d = %d %s, want 201", i, r.status, r.body)
					continue
				}
				created++
				continue
			}
			want := nulIntents[i/5].field
			if code, field := resp.errorCode(t); r.status != http.StatusUnprocessableEntity || code != approvals.CodeInvalidRequest || field != want {
				t.Errorf("NUL in %s = %d %s field %q, want 422 %s field %q (%s)", want, r.status, code, field, approvals.CodeInvalidRequest, want, r.body)
				continue
			}
			refused++
		}
		if created != valid || refused != len(nulIntents) {
			t.Errorf("%d × 201 and %d × 422, want %d and %d", created, refused, valid, len(nulIntents))
		}
		b.expectCounts(t, map[string]int{
			`SELECT count(*) FROM requests`:                       valid,
			`SELECT count(*) FROM requests WHERE run_id = 'r-ok'`: valid,
		})
	})
}

func TestDecodeIntentNUL(t *testing.T) {
	t.Parallel()
	for _, tt := range nulIntents {
		_, err := approvals.DecodeIntent([]byte(tt.body))
		var input *approvals.InputError
		if !errors.As(err, &input) || input.Code != approvals.CodeInvalidRequest || input.Field != tt.field || !strings.Contains(input.Message, "U+0000") {
			t.Errorf("%s: DecodeIntent = %v, want invalid_request naming %s and U+0000", tt.body, err, tt.field)
		}
	}
	// A backslash followed by "u0000" is text, not U+0000.
	in, err := approvals.DecodeIntent([]byte(`{"run_id":"r","step":1,"tool":"t","effect":{"note\\u0000":"\\u0000"},"summary":"\\u0000"}`))
	if err != nil || in.Summary != `\u0000` || string(in.Snapshot) != `{"note\\u0000":"\\u0000"}` {
		t.Errorf("escaped backslash = %q %s, %v; want it accepted", in.Summary, in.Snapshot, err)
	}
}

// A reference holding U+0000 names no request.
func TestHookNULReferenceNotFound(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		for _, r := range []response{
			b.do(t, http.MethodGet, "/v1/requests/wa_%00", testToken, nil, nil),
			b.do(t, http.MethodPost, "/v1/requests/%00/cancel", testToken, nil, nil),
		} {
			if code, _ := r.errorCode(t); r.status != http.StatusNotFound || code != approvals.CodeNotFound {
				t.Errorf("= %d %s, want 404 %s", r.status, r.body, approvals.CodeNotFound)
			}
		}
	})
}
