package httpsender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/internal/outbound"
)

// Codes the provider may send as "code" or "error.code", by the outcome they
// force. A recognised code wins over the HTTP status.
var codeOutcomes = map[string]sender.Outcome{
	"rate_limited":        sender.OutcomeRetry,
	"timeout":             sender.OutcomeRetry,
	"service_unavailable": sender.OutcomeRetry,
	"connection_reset":    sender.OutcomeRetry,
	"unknown_outcome":     sender.OutcomeVerify,
	"gateway_timeout":     sender.OutcomeVerify,
	"card_declined":       sender.OutcomeFatal,
	"insufficient_funds":  sender.OutcomeFatal,
	"policy_violation":    sender.OutcomeFatal,
	"invalid_request":     sender.OutcomeFatal,
}

// labelled are the statuses whose http_<status> code is a metric label of
// its own; any other is counted under "other".
var labelled = map[int]bool{
	400: true, 401: true, 403: true, 404: true, 408: true, 409: true, 422: true, 425: true, 429: true,
	500: true, 502: true, 503: true, 504: true,
}

// Answer is what came back from one send.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Err is a transport error; Written says whether the whole request had
	// been written before it happened.
	Err     error
	Written bool
}

// Classify applies the table in docs/EXECUTOR.md. A recognised JSON code wins over the
// HTTP status; an unrecognised code defers to the status. Transport errors
// before the request was written are retryable, after it ambiguous.
func Classify(a Answer, now time.Time) sender.Attempt {
	if a.Err != nil {
		return classifyTransport(a)
	}
	fields := parseBody(a.Body)
	c := sender.Attempt{
		Code:        fields.code,
		Message:     fields.message,
		ProviderRef: fields.ref,
		RetryAfter:  retryAfter(a.Header.Get("Retry-After"), now),
		Status:      a.Status,
		Body:        a.Body,
	}
	if c.Message == "" {
		c.Message = strconv.Itoa(a.Status) + " " + http.StatusText(a.Status)
	}
	if o, ok := codeOutcomes[fields.code]; ok {
		c.Outcome = o
		return c
	}
	if c.Code == "" {
		c.Code = "http_" + strconv.Itoa(a.Status)
	}
	if c.Outcome = statusOutcome(a.Status); c.Outcome == sender.OutcomeSucceeded {
		c.Code, c.Message = "", ""
	}
	return c
}

// statusOutcome is the table's outcome of a status that came with no
// recognised code.
func statusOutcome(s int) sender.Outcome {
	switch {
	case s >= 200 && s <= 299:
		return sender.OutcomeSucceeded
	case s == 408, s == 425, s == 429, s == 500, s == 502, s == 503:
		return sender.OutcomeRetry
	case s == 504:
		return sender.OutcomeVerify
	case s >= 400 && s <= 499:
		return sender.OutcomeFatal
	default:
		return sender.OutcomeReview
	}
}

// CodeOutcome is what a code Classify records stood for; known is false
// for a code outside the fixed set of metric labels.
func CodeOutcome(code string) (o sender.Outcome, known bool) {
	if o, ok := codeOutcomes[code]; ok {
		return o, true
	}
	switch code {
	case sender.CodeConnectionRefused, sender.CodeConnectionFailed:
		return sender.OutcomeRetry, true
	case sender.CodeSendTimeout, sender.CodeConnectionLost:
		return sender.OutcomeVerify, true
	}
	if s, ok := strings.CutPrefix(code, "http_"); ok {
		if n, err := strconv.Atoi(s); err == nil && labelled[n] {
			return statusOutcome(n), true
		}
	}
	return "", false
}

func classifyTransport(a Answer) sender.Attempt {
	msg := outbound.Describe(a.Err)
	if !a.Written {
		code := sender.CodeConnectionFailed
		if errors.Is(a.Err, syscall.ECONNREFUSED) {
			code = sender.CodeConnectionRefused
		}
		return sender.Attempt{Outcome: sender.OutcomeRetry, Code: code, Message: msg}
	}
	code := sender.CodeConnectionLost
	var ne net.Error
	if errors.As(a.Err, &ne) && ne.Timeout() || errors.Is(a.Err, context.DeadlineExceeded) {
		code = sender.CodeSendTimeout
	}
	return sender.Attempt{Outcome: sender.OutcomeVerify, Code: code, Message: msg}
}

type bodyFields struct{ code, message, ref string }

// parseBody reads the fields the table needs from a JSON object body; any
// other body has none.
func parseBody(body []byte) bodyFields {
	var f bodyFields
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return f
	}
	var doc struct {
		Code        json.RawMessage `json:"code"`
		Message     json.RawMessage `json:"message"`
		ID          json.RawMessage `json:"id"`
		ProviderRef json.RawMessage `json:"provider_ref"`
		Error       json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return f
	}
	f.code, f.message = scalar(doc.Code), scalar(doc.Message)
	if f.ref = scalar(doc.ID); f.ref == "" {
		f.ref = scalar(doc.ProviderRef)
	}
	var inner struct {
		Code    json.RawMessage `json:"code"`
		Message json.RawMessage `json:"message"`
	}
	if len(doc.Error) > 0 && doc.Error[0] == '{' && json.Unmarshal(doc.Error, &inner) == nil {
		if f.code == "" {
			f.code = scalar(inner.Code)
		}
		if f.message == "" {
			f.message = scalar(inner.Message)
		}
	}
	return f
}

// scalar returns a JSON string's value or a number's text; anything else is "".
func scalar(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// maxRetryAfter bounds how long a provider can push an attempt out.
const maxRetryAfter = time.Hour

// retryAfter reads a Retry-After value in seconds or as an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.Atoi(v); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}
