package approvals

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/wire"
)

// Stable machine codes of refusals: the agent hook's error bodies, Slack's
// answers and the inbox's notices carry the same ones (see Refusal).
const (
	CodeMalformedJSON    = "malformed_json"
	CodeInvalidRequest   = "invalid_request"
	CodeInvalidEffect    = "invalid_effect"
	CodeUnknownTool      = "unknown_tool"
	CodeKeyReused        = "key_reused"
	CodePruned           = "pruned"
	CodeUnauthorized     = "unauthorized"
	CodeTooLarge         = "too_large"
	CodeNotFound         = "not_found"
	CodeAlreadyDecided   = "already_decided"
	CodeStaleCard        = "stale_card"
	CodeNotApprover      = "not_approver"
	CodeNoLongerApprover = "no_longer_approver"
	CodeSelfApproval     = "self_approval"
	CodeAlreadyResolved  = "already_resolved"
	CodeNoCallback       = "callback_not_configured"
	CodeNoDelivery       = "nothing_to_redrive"
	CodeUnavailable      = "unavailable"
	CodeDeniedByPolicy   = "denied_by_policy"
	CodeInternal         = "internal"
	// The agent API's own: a route that exists answers other methods with
	// it, and a body that is not JSON by its Content-Type.
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// RetryAfter is the wait an unavailable answer asks for (HTTP Retry-After):
// about what a pool takes to reconnect once PostgreSQL is back from a
// restart or a failover.
const RetryAfter = 2 * time.Second

// Sentinel errors of intake and review.
var (
	// ErrKeyReused: the key already names a request with other effect fields.
	ErrKeyReused = errors.New("key already used for a different write")
	// ErrKeyTaken: the key names another agent's request. It is a kind of
	// ErrKeyReused (409 key_reused) that says nothing about that request.
	ErrKeyTaken = fmt.Errorf("key already names another agent's request: %w", ErrKeyReused)
	// ErrPruned: the key named a request that settled and was pruned under
	// the retention policy (PrunedError says how it ended). The key never
	// runs again.
	ErrPruned = errors.New("the key's request was pruned")
	// ErrUnknownTool: the intent names a tool the configuration does not have.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnauthorized: no agent bearer token, or one no agent holds.
	ErrUnauthorized = errors.New("a valid agent bearer token is required")
	// ErrTooLarge: the body is over MaxBodyBytes.
	ErrTooLarge = errors.New("body too large")
	// ErrNotFound: no request has that id or key, or none the caller may see.
	ErrNotFound = store.ErrNotFound
	// ErrStaleCard: the click carries an old round or a payload hash that is
	// no longer the request's.
	ErrStaleCard = errors.New("stale card")
	// ErrNotAllowed: the decider is not among the tool's approvers.
	ErrNotAllowed = errors.New("not allowed to decide this request")
	// ErrNoLongerApprover: the decider is among the approvers frozen on the
	// request but no longer among its tool's in the configuration in force.
	// It is a kind of ErrNotAllowed with its own code.
	ErrNoLongerApprover = fmt.Errorf("%w: no longer an approver of the tool", ErrNotAllowed)
	// ErrToolRemoved: as ErrNoLongerApprover (which it is), because the
	// request's tool is no longer configured at all.
	ErrToolRemoved = fmt.Errorf("%w: the tool is no longer configured", ErrNoLongerApprover)
	// ErrSelfApproval: the decider is the person the request was made for.
	ErrSelfApproval = errors.New("may not approve a request made for yourself")
	// ErrOwnerApproval: the decider owns the agent that asked; it is a
	// self-approval (errors.Is ErrSelfApproval) with its own words.
	ErrOwnerApproval = fmt.Errorf("%w: an owner of the agent that asked", ErrSelfApproval)
	// ErrNotPending: the request expired or was cancelled before a decision.
	ErrNotPending = errors.New("request is no longer pending")
	// ErrAlreadyResolved: the execution left needs_review before the
	// resolution asked for.
	ErrAlreadyResolved = errors.New("execution already resolved")
	// ErrNoCallback: a redrive of a request whose agent has no callback
	// configured.
	ErrNoCallback = errors.New("the agent has no callback configured")
	// ErrDeniedByPolicy: the tool's policy refuses the write (DeniedError
	// says which rule and why).
	ErrDeniedByPolicy = errors.New("denied by policy")
	// ErrNoDelivery: a redrive of a request that never queued a callback.
	ErrNoDelivery = errors.New("the request has no callback delivery to redrive")
)

// InputError is a problem with an agent's request body; Code is
// CodeMalformedJSON, CodeInvalidRequest or CodeInvalidEffect, and Field is
// the JSON pointer (RFC 6901) of the value at fault: /run_id,
// /effect/lines/1/sku ("" for the whole body). Errors lists every
// violation when there are several (an effect against its schema), the
// first of them being Field and Message.
type InputError struct {
	Code    string
	Field   string
	Message string
	Errors  []Violation
}

func (e *InputError) Error() string { return e.Message }

// Violation is one value at fault: its JSON pointer and why, as the
// agent API's error envelope lists it.
type Violation = wire.Violation

// invalid is an invalid_request naming the top-level member field (or a
// pointer, when field is one).
func invalid(field, format string, args ...any) *InputError {
	return &InputError{Code: CodeInvalidRequest, Field: pointerTo(field), Message: fmt.Sprintf(format, args...)}
}

// pointerTo is the JSON pointer of a top-level member; "" and pointers are
// kept as they are.
func pointerTo(field string) string {
	if field == "" || strings.HasPrefix(field, "/") {
		return field
	}
	return jsonPointer([]string{field})
}

// UnknownToolError names the tool an intent asked for, and the tools the
// agent may use instead; it unwraps to ErrUnknownTool.
type UnknownToolError struct {
	Tool string
	// Available are the names of the tools the agent may use, sorted.
	Available []string
}

func (e *UnknownToolError) Error() string { return fmt.Sprintf("%v: %q", ErrUnknownTool, e.Tool) }

// Unwrap lets errors.Is match ErrUnknownTool.
func (e *UnknownToolError) Unwrap() error { return ErrUnknownTool }

// NotPendingError says why a request can no longer be decided or cancelled:
// its status, and the decision that stands, if one does.
type NotPendingError struct {
	Status   store.RequestStatus
	Decision *store.Decision // nil when the request left pending undecided
}

func (e *NotPendingError) Error() string {
	if e.Decision != nil {
		return fmt.Sprintf("request already %s by %s", past(e.Decision.Verdict), e.Decision.DecidedBy)
	}
	return "request is " + string(e.Status)
}

// Unwrap lets errors.Is match ErrNotPending.
func (e *NotPendingError) Unwrap() error { return ErrNotPending }

// PrunedError is a replay of a key whose request was pruned: Status is how
// it ended (rejected, expired, cancelled, succeeded or failed) and
// SettledAt when. It is ErrPruned.
type PrunedError struct {
	Status    string
	SettledAt time.Time
}

func (e *PrunedError) Error() string {
	return fmt.Sprintf("the key's request was pruned after it settled as %s", e.Status)
}

// Is makes a PrunedError ErrPruned.
func (e *PrunedError) Is(target error) bool { return target == ErrPruned }

// DeniedError is an intent the tool's policy refuses: the request is stored,
// rejected by "policy:<tier>", and every replay of the intent is answered
// with the same error. It is ErrDeniedByPolicy.
type DeniedError struct {
	Key     string // the request's key, for lookup and the audit
	Tier    string // the rule that denied it
	Message string // the rule's deny message
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("denied by policy %q: %s", e.Tier, e.Message)
}

// Unwrap lets errors.Is match ErrDeniedByPolicy.
func (e *DeniedError) Unwrap() error { return ErrDeniedByPolicy }

// deniedBy is the refusal every post of a request the policy denied gets.
func deniedBy(req store.Request) error {
	return &DeniedError{Key: req.Key, Tier: req.Policy.TierName, Message: req.Policy.Deny}
}
