package executor

import (
	"fmt"
	"time"
)

// Tool is where and how an approved write of one tool is performed. It comes
// only from the operator's configuration, never from an agent's request.
type Tool struct {
	Name    string
	Method  string
	URL     string
	Headers map[string]string // already expanded from ${VAR}; never logged
	Timeout time.Duration     // per HTTP call
	// Secrets sign this tool's dispatches instead of Config.Secrets, so a
	// dispatch captured at one provider does not verify at another; several
	// while one is rotated. Never logged.
	Secrets [][]byte
	// KeyAware says the provider honours Idempotency-Key, so a resend under
	// the same key is safe when the outcome is unknown.
	KeyAware bool
	// VerifyAfter is how long an unknown outcome of a key-unaware tool
	// settles before it is first verified: a provider may still be storing
	// a write whose answer the executor gave up waiting for, and a 404 read
	// too early would send the write again (docs/EXECUTOR.md).
	VerifyAfter  time.Duration
	Verify       *Endpoint // GET; 200 done, 404 not done
	Precondition *Endpoint // GET before the first send; 2xx to proceed
	MaxAttempts  int
	ClaimTimeout time.Duration
	ApprovalTTL  time.Duration // 0: approvals never go stale
	RequestTTL   time.Duration // how long a superseded request waits for a new decision
}

// Endpoint is a URL the executor reads. URL is a URLTemplate: each {key} is
// replaced by the key, escaped for the part of the URL it is in.
type Endpoint struct {
	URL     string
	Headers map[string]string

	// parsed once by New; nil in an Endpoint built elsewhere
	tmpl *URLTemplate
	err  error
}

// Defaults for a tool that leaves them out.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultClaimTimeout = 2 * time.Minute
	DefaultMaxAttempts  = 5
	DefaultRequestTTL   = 72 * time.Hour
	// DefaultVerifyAfter is the least settle time of a key-unaware tool's
	// unknown outcome; twice the tool's timeout when that is longer.
	DefaultVerifyAfter = 30 * time.Second
)

// WithDefaults returns t as the executor runs it: every setting t leaves
// out filled in (config check prints these, so they are stated once).
func (t Tool) WithDefaults() Tool { return t.withDefaults() }

func (t Tool) withDefaults() Tool {
	if t.Method == "" {
		t.Method = "POST"
	}
	if t.Timeout <= 0 {
		t.Timeout = DefaultTimeout
	}
	if t.ClaimTimeout <= 0 {
		t.ClaimTimeout = DefaultClaimTimeout
	}
	if t.MaxAttempts <= 0 {
		t.MaxAttempts = DefaultMaxAttempts
	}
	if t.RequestTTL <= 0 {
		t.RequestTTL = DefaultRequestTTL
	}
	if t.KeyAware {
		t.VerifyAfter = 0 // a same-key resend is safe at any time
	} else if t.VerifyAfter <= 0 {
		t.VerifyAfter = max(DefaultVerifyAfter, 2*t.Timeout)
	}
	t.Verify, t.Precondition = t.Verify.parsed(), t.Precondition.parsed()
	return t
}

// parsed returns a copy of e with its template parsed, or nil for nil.
func (e *Endpoint) parsed() *Endpoint {
	if e == nil {
		return nil
	}
	c := *e
	c.tmpl, c.err = ParseURLTemplate(c.URL)
	return &c
}

// URLFor returns the endpoint's URL for key.
func (e Endpoint) URLFor(key string) (string, error) {
	if e.tmpl == nil && e.err == nil {
		e.tmpl, e.err = ParseURLTemplate(e.URL)
	}
	if e.err != nil {
		// Not the URL itself: it may carry a secret from the environment.
		return "", fmt.Errorf("unusable URL template: %w", e.err)
	}
	return e.tmpl.Expand(key), nil
}
