package approvals

import (
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// Stable machine codes carried by HTTP error bodies and Slack answers.
const (
	CodeMalformedJSON  = "malformed_json"
	CodeInvalidRequest = "invalid_request"
	CodeUnknownTool    = "unknown_tool"
	CodeKeyReused      = "key_reused"
	CodeUnauthorized   = "unauthorized"
	CodeTooLarge       = "too_large"
	CodeNotFound       = "not_found"
	CodeAlreadyDecided = "already_decided"
	CodeUnavailable    = "unavailable"
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
	// ErrUnknownTool: the intent names a tool the configuration does not have.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrNotFound: no request has that id or key, or none the caller may see.
	ErrNotFound = store.ErrNotFound
	// ErrStaleCard: the click carries an old round or a payload hash that is
	// no longer the request's.
	ErrStaleCard = errors.New("stale card")
	// ErrNotAllowed: the decider is not among the tool's approvers.
	ErrNotAllowed = errors.New("not allowed to decide this request")
	// ErrSelfApproval: the decider is the person the request was made for.
	ErrSelfApproval = errors.New("may not approve a request made for yourself")
	// ErrNotPending: the request expired or was cancelled before a decision.
	ErrNotPending = errors.New("request is no longer pending")
)

// InputError is a problem with an agent's request body; Code is
// CodeMalformedJSON or CodeInvalidRequest and Field names the field, if any.
type InputError struct {
	Code    string
	Field   string
	Message string
}

func (e *InputError) Error() string { return e.Message }

func invalid(field, format string, args ...any) *InputError {
	return &InputError{Code: CodeInvalidRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// NotPendingError says why a request can no longer be decided or cancelled.
type NotPendingError struct {
	Status store.RequestStatus
}

func (e *NotPendingError) Error() string { return "request is " + string(e.Status) }

// Unwrap lets errors.Is match ErrNotPending.
func (e *NotPendingError) Unwrap() error { return ErrNotPending }
