package executor

import (
	"net/url"
	"strings"
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
	// KeyAware says the provider honours Idempotency-Key, so a resend under
	// the same key is safe when the outcome is unknown.
	KeyAware     bool
	Verify       *Endpoint // GET; 200 done, 404 not done
	Precondition *Endpoint // GET before the first send; 2xx to proceed
	MaxAttempts  int
	ClaimTimeout time.Duration
	ApprovalTTL  time.Duration // 0: approvals never go stale
	RequestTTL   time.Duration // how long a superseded request waits for a new decision
}

// Endpoint is a URL the executor reads; {key} is replaced by the
// path-escaped key.
type Endpoint struct {
	URL     string
	Headers map[string]string
}

// Defaults for a tool that leaves them out.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultClaimTimeout = 2 * time.Minute
	DefaultMaxAttempts  = 5
	DefaultRequestTTL   = 72 * time.Hour
)

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
	return t
}

// URLFor substitutes the key into the endpoint's URL.
func (e Endpoint) URLFor(key string) string {
	return strings.ReplaceAll(e.URL, "{key}", url.QueryEscape(key))
}
