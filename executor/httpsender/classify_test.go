package httpsender

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/executor/sender"
)

// TestClassify covers every row of the classification table in docs/EXECUTOR.md.
func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	codeBody := func(code string) []byte { return []byte(`{"code":"` + code + `"}`) }
	nested := func(code string) []byte { return []byte(`{"error":{"code":"` + code + `","message":"m"}}`) }
	timeoutErr := &net.OpError{Op: "read", Err: timeoutError{}}
	cases := []struct {
		name   string
		answer Answer
		want   sender.Outcome
		code   string
	}{
		{"2xx", Answer{Status: 201, Body: []byte(`{"id":"obj_1"}`)}, sender.OutcomeSucceeded, ""},
		{"200 empty body", Answer{Status: 200}, sender.OutcomeSucceeded, ""},
		// retry codes, and a code wins over the status
		{"rate_limited", Answer{Status: 400, Body: codeBody("rate_limited")}, sender.OutcomeRetry, "rate_limited"},
		{"timeout code", Answer{Status: 200, Body: nested("timeout")}, sender.OutcomeRetry, "timeout"},
		{"service_unavailable", Answer{Status: 422, Body: codeBody("service_unavailable")}, sender.OutcomeRetry, "service_unavailable"},
		{"connection_reset code", Answer{Status: 500, Body: nested("connection_reset")}, sender.OutcomeRetry, "connection_reset"},
		// retry statuses
		{"408", Answer{Status: 408}, sender.OutcomeRetry, "http_408"},
		{"425", Answer{Status: 425}, sender.OutcomeRetry, "http_425"},
		{"429", Answer{Status: 429}, sender.OutcomeRetry, "http_429"},
		{"500", Answer{Status: 500}, sender.OutcomeRetry, "http_500"},
		{"502", Answer{Status: 502}, sender.OutcomeRetry, "http_502"},
		{"503", Answer{Status: 503}, sender.OutcomeRetry, "http_503"},
		{"refused before written", Answer{Err: &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, sender.OutcomeRetry, sender.CodeConnectionRefused},
		{"dial failure before written", Answer{Err: errors.New("no such host")}, sender.OutcomeRetry, sender.CodeConnectionFailed},
		// verify
		{"unknown_outcome", Answer{Status: 500, Body: codeBody("unknown_outcome")}, sender.OutcomeVerify, "unknown_outcome"},
		{"gateway_timeout", Answer{Status: 400, Body: nested("gateway_timeout")}, sender.OutcomeVerify, "gateway_timeout"},
		{"504", Answer{Status: 504}, sender.OutcomeVerify, "http_504"},
		{"timeout after written", Answer{Err: timeoutErr, Written: true}, sender.OutcomeVerify, sender.CodeSendTimeout},
		{"deadline after written", Answer{Err: fmt.Errorf("post: %w", context.DeadlineExceeded), Written: true}, sender.OutcomeVerify, sender.CodeSendTimeout},
		{"reset after written", Answer{Err: &net.OpError{Op: "read", Err: syscall.ECONNRESET}, Written: true}, sender.OutcomeVerify, sender.CodeConnectionLost},
		// fatal
		{"card_declined", Answer{Status: 402, Body: nested("card_declined")}, sender.OutcomeFatal, "card_declined"},
		{"insufficient_funds", Answer{Status: 503, Body: codeBody("insufficient_funds")}, sender.OutcomeFatal, "insufficient_funds"},
		{"policy_violation", Answer{Status: 200, Body: codeBody("policy_violation")}, sender.OutcomeFatal, "policy_violation"},
		{"invalid_request", Answer{Status: 429, Body: nested("invalid_request")}, sender.OutcomeFatal, "invalid_request"},
		{"other 4xx", Answer{Status: 409}, sender.OutcomeFatal, "http_409"},
		{"other 4xx with unknown code", Answer{Status: 422, Body: codeBody("amount_too_small")}, sender.OutcomeFatal, "amount_too_small"},
		// anything else
		{"3xx", Answer{Status: 302}, sender.OutcomeReview, "http_302"},
		{"501", Answer{Status: 501}, sender.OutcomeReview, "http_501"},
		{"unknown code on 5xx", Answer{Status: 507, Body: codeBody("disk_full")}, sender.OutcomeReview, "disk_full"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Classify(c.answer, now)
			if got.Outcome != c.want || got.Code != c.code {
				t.Fatalf("Classify = %s/%q, want %s/%q", got.Outcome, got.Code, c.want, c.code)
			}
		})
	}
}

func TestClassifyRetryAfterAndRef(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := http.Header{}
	h.Set("Retry-After", "120")
	if got := Classify(Answer{Status: 429, Header: h}, now).RetryAfter; got != 2*time.Minute {
		t.Fatalf("Retry-After seconds: %s", got)
	}
	h.Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
	if got := Classify(Answer{Status: 503, Header: h}, now).RetryAfter; got != 90*time.Second {
		t.Fatalf("Retry-After date: %s", got)
	}
	h.Set("Retry-After", "99999999")
	if got := Classify(Answer{Status: 503, Header: h}, now).RetryAfter; got != maxRetryAfter {
		t.Fatalf("Retry-After is not capped: %s", got)
	}
	if got := Classify(Answer{Status: 201, Body: []byte(`{"provider_ref":"ch_1"}`)}, now).ProviderRef; got != "ch_1" {
		t.Fatalf("provider_ref %q", got)
	}
	if got := Classify(Answer{Status: 201, Body: []byte(`{"id":42}`)}, now).ProviderRef; got != "42" {
		t.Fatalf("numeric id %q", got)
	}
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
