package executor

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

	"github.com/countersign/countersign/internal/outbound"
)

// Outcome is what the executor does with a provider's answer.
type Outcome string

// Outcomes of one attempt (docs/EXECUTOR.md, "Classification table").
const (
	OutcomeSucceeded Outcome = "succeeded" // done
	OutcomeRetry     Outcome = "retry"     // certainly not done; try again under the same key
	OutcomeVerify    Outcome = "verify"    // may be done; ask the provider before anything else
	OutcomeFatal     Outcome = "fatal"     // refused; a retry would be refused too
	OutcomeReview    Outcome = "review"    // an answer nobody taught us; a human decides
)

// Codes the provider may send as "code" or "error.code", by the outcome they
// force. A recognised code wins over the HTTP status.
var codeOutcomes = map[string]Outcome{
	"rate_limited":        OutcomeRetry,
	"timeout":             OutcomeRetry,
	"service_unavailable": OutcomeRetry,
	"connection_reset":    OutcomeRetry,
	"unknown_outcome":     OutcomeVerify,
	"gateway_timeout":     OutcomeVerify,
	"card_declined":       OutcomeFatal,
	"insufficient_funds":  OutcomeFatal,
	"policy_violation":    OutcomeFatal,
	"invalid_request":     OutcomeFatal,
}

// Codes the executor itself records for answers that carry no code.
const (
	CodeConnectionRefused = "connection_refused" // nothing was written
	CodeConnectionFailed  = "connection_failed"  // nothing was written
	CodeSendTimeout       = "send_timeout"       // written, no answer in time
	CodeConnectionLost    = "connection_lost"    // written, connection dropped
	CodeExhausted         = "attempts_exhausted" // retryable, but max_attempts reached
	CodeSnapshotMismatch  = "snapshot_mismatch"  // stored bytes do not hash to the approved hash
	CodeApprovalExpired   = "approval_expired"   // decision older than approval_ttl
	CodePrecondition      = "precondition_failed"
	CodeClaimTimeout      = "claim_timeout"
	CodeClaimTooShort     = "claim_too_short" // released unsent: the claim would end mid-send
	CodeNotDone           = "verified_not_done"
	CodeUnverifiable      = "unverifiable"
)

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

// Classification is the verdict on one Answer.
type Classification struct {
	Outcome     Outcome
	Code        string // the provider's code, http_<status>, or one of the Code constants
	Message     string
	RetryAfter  time.Duration // from Retry-After; 0 when absent
	ProviderRef string        // the response's "id" or "provider_ref"
}

// Classify applies the table in docs/EXECUTOR.md. A recognised JSON code wins over the
// HTTP status; an unrecognised code defers to the status. Transport errors
// before the request was written are retryable, after it ambiguous.
func Classify(a Answer, now time.Time) Classification {
	if a.Err != nil {
		return classifyTransport(a)
	}
	fields := parseBody(a.Body)
	c := Classification{
		Code:        fields.code,
		Message:     fields.message,
		ProviderRef: fields.ref,
		RetryAfter:  retryAfter(a.Header.Get("Retry-After"), now),
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
	switch s := a.Status; {
	case s >= 200 && s <= 299:
		c.Outcome, c.Code, c.Message = OutcomeSucceeded, "", ""
	case s == 408, s == 425, s == 429, s == 500, s == 502, s == 503:
		c.Outcome = OutcomeRetry
	case s == 504:
		c.Outcome = OutcomeVerify
	case s >= 400 && s <= 499:
		c.Outcome = OutcomeFatal
	default:
		c.Outcome = OutcomeReview
	}
	return c
}

func classifyTransport(a Answer) Classification {
	msg := outbound.Describe(a.Err)
	if !a.Written {
		code := CodeConnectionFailed
		if errors.Is(a.Err, syscall.ECONNREFUSED) {
			code = CodeConnectionRefused
		}
		return Classification{Outcome: OutcomeRetry, Code: code, Message: msg}
	}
	code := CodeConnectionLost
	var ne net.Error
	if errors.As(a.Err, &ne) && ne.Timeout() || errors.Is(a.Err, context.DeadlineExceeded) {
		code = CodeSendTimeout
	}
	return Classification{Outcome: OutcomeVerify, Code: code, Message: msg}
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
