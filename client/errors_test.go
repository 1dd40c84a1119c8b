package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/client"
)

var requestID = regexp.MustCompile(`^req_[0-9a-f]{24}$`)

// A refusal carries every value at fault and the id the server logged the
// call under, and its message quotes that id.
func TestAPIErrorCarriesEveryViolationAndTheRequestID(t *testing.T) {
	t.Parallel()
	g := startGate(t)
	c := client.New(g.URL, agentToken)
	ctx := context.Background()

	twice := credit(0)
	twice.Effect = map[string]any{"invoice": "inv_8841", "amount_cents": 0, "currency": "GBP"}
	_, err := c.Request(ctx, twice)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, client.ErrInvalidEffect) {
		t.Fatalf("an effect with two faults: %v", err)
	}
	var fields []string
	for _, v := range apiErr.Errors {
		fields = append(fields, v.Field)
		if v.Message == "" {
			t.Errorf("violation at %s has no message", v.Field)
		}
	}
	slices.Sort(fields)
	if !slices.Equal(fields, []string{"/effect/amount_cents", "/effect/currency"}) ||
		apiErr.Field != apiErr.Errors[0].Field || apiErr.Message != apiErr.Errors[0].Message {
		t.Errorf("the violations = %+v; field %s, message %q", apiErr.Errors, apiErr.Field, apiErr.Message)
	}
	if !requestID.MatchString(apiErr.RequestID) || !strings.HasSuffix(err.Error(), " (request_id "+apiErr.RequestID+")") {
		t.Errorf("the refusal names request %q in %q", apiErr.RequestID, err)
	}

	_, err = c.Get(ctx, "wa_nothing")
	if !errors.As(err, &apiErr) || !requestID.MatchString(apiErr.RequestID) || !strings.Contains(err.Error(), apiErr.RequestID) {
		t.Errorf("a request not found: %v (request id %q)", err, apiErr.RequestID)
	}
}

// An answer without the envelope (a proxy's page) still names the request
// when it carries the Request-Id header, and its message says no id when
// there is none.
func TestAPIErrorWithoutTheEnvelope(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/requests/named/cancel" {
			w.Header().Set("Request-Id", "req_00000000000000000000abcd")
		}
		http.Error(w, "<html>not here</html>", http.StatusNotFound)
	}))
	defer srv.Close()
	c := client.New(srv.URL, agentToken)

	_, err := c.Cancel(context.Background(), "named")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound || apiErr.RequestID != "req_00000000000000000000abcd" ||
		err.Error() != "countersign: HTTP 404: Not Found (request_id req_00000000000000000000abcd)" {
		t.Errorf("a page with a Request-Id: %v", err)
	}
	_, err = c.Cancel(context.Background(), "anonymous")
	if !errors.As(err, &apiErr) || apiErr.RequestID != "" || strings.Contains(err.Error(), "request_id") {
		t.Errorf("a page without a Request-Id: %v", err)
	}
}
