package executor

import (
	"context"
	"time"

	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/store"
)

// Tool is where and how an approved write of one tool is performed. It comes
// only from the operator's configuration, never from an agent's request.
//
// Sender performs the write; Verifier, when set, asks the provider whether
// it has a write, and Checker whether a write may still go ahead. A tool
// without a Sender is sent over HTTP (executor/httpsender) with Method, URL,
// Headers and Secrets, verified through Verify and checked through
// Precondition.
type Tool struct {
	Name     string
	Sender   sender.Sender
	Verifier sender.Verifier // nil: the provider cannot be asked
	Checker  sender.Checker  // nil: no precondition

	Method  string
	URL     string
	Headers map[string]string // already expanded from ${VAR}; never logged
	Timeout time.Duration     // per call to the provider
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
	Verify       *Endpoint // HTTP: GET; 200 done, 404 not done
	Precondition *Endpoint // HTTP: GET before the first send; 2xx to proceed
	MaxAttempts  int
	ClaimTimeout time.Duration
	ApprovalTTL  time.Duration // 0: approvals never go stale
	RequestTTL   time.Duration // how long a superseded request waits for a new decision
	// PolicyVersion is the version of the tool's review policy in force,
	// and Recheck says what that policy makes of an approved request. With
	// both set, an approval given under another version is re-checked
	// before the write is first sent (see PolicyRecheck).
	PolicyVersion string
	Recheck       func(ctx context.Context, req store.Request, approved store.Decision) (PolicyRecheck, error)
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
	if t.Sender == nil && t.Method == "" {
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
	return t
}
