package client

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels for every error code of the hook (the ErrorCode schema of
// GET /v1/openapi.json). An *APIError matches the one for its code:
// errors.Is(err, client.ErrKeyReused).
var (
	// ErrMalformedJSON: the body was not JSON (a bug in the caller).
	ErrMalformedJSON = errors.New("countersign: malformed_json")
	// ErrInvalidRequest: a field is missing or wrong; APIError.Field names it.
	ErrInvalidRequest = errors.New("countersign: invalid_request")
	// ErrInvalidEffect: the effect fails the tool's effect_schema;
	// APIError.Field is the failing path. Nothing was stored.
	ErrInvalidEffect = errors.New("countersign: invalid_effect")
	// ErrUnknownTool: the configuration has no such tool.
	ErrUnknownTool = errors.New("countersign: unknown_tool")
	// ErrDeniedByPolicy: the tool's policy refuses this write (403);
	// APIError.Tier names the rule and APIError.Key the request, stored as
	// rejected. Sending the same intent again gets the same answer: only a
	// different write, or a person changing the policy, can proceed.
	ErrDeniedByPolicy = errors.New("countersign: denied_by_policy")
	// ErrKeyReused: the key already names a different write (or another
	// agent's). Resending will not help; the intent must change.
	ErrKeyReused = errors.New("countersign: key_reused")
	// ErrPruned: the key named this intent's request, which settled and was
	// pruned under the server's retention policy; APIError.FinalStatus says
	// how it ended. The key never runs again: a new write needs a new key.
	ErrPruned = errors.New("countersign: pruned")
	// ErrUnauthorized: no token, or one no agent holds.
	ErrUnauthorized = errors.New("countersign: unauthorized")
	// ErrTooLarge: the body is over 1 MiB.
	ErrTooLarge = errors.New("countersign: too_large")
	// ErrNotFound: no request has that id or key, or it is another agent's.
	ErrNotFound = errors.New("countersign: not_found")
	// ErrAlreadyDecided: the request is no longer pending.
	ErrAlreadyDecided = errors.New("countersign: already_decided")
	// ErrStaleCard, ErrNotApprover, ErrNoLongerApprover, ErrSelfApproval
	// and ErrAlreadyResolved are reviewers' refusals; the hook does not
	// answer them to agents, but they are part of the one vocabulary.
	ErrStaleCard        = errors.New("countersign: stale_card")
	ErrNotApprover      = errors.New("countersign: not_approver")
	ErrNoLongerApprover = errors.New("countersign: no_longer_approver")
	ErrSelfApproval     = errors.New("countersign: self_approval")
	ErrAlreadyResolved  = errors.New("countersign: already_resolved")
	// ErrCallbackNotConfigured: Redrive, for an agent without a callback.
	ErrCallbackNotConfigured = errors.New("countersign: callback_not_configured")
	// ErrNothingToRedrive: Redrive before any callback was sent for the
	// request (it has not settled or needed review).
	ErrNothingToRedrive = errors.New("countersign: nothing_to_redrive")
	// ErrOutcomeConflict: an agent-executed write's outcome was reported
	// already, and differently; the first report stands.
	ErrOutcomeConflict = errors.New("countersign: outcome_conflict")
	// ErrNotAgentExecuted: an outcome reported for a request that awaits
	// none from its agent (countersign sends its tool's writes, or it was
	// not approved).
	ErrNotAgentExecuted = errors.New("countersign: not_agent_executed")
	// ErrUnavailable: countersign cannot reach its database; Do, Request,
	// Get and Wait retry it after APIError.RetryAfter.
	ErrUnavailable = errors.New("countersign: unavailable")
	// ErrInternal: an unexpected failure; nothing was recorded by it. Get,
	// Wait and Tools retry it; the other calls return it.
	ErrInternal = errors.New("countersign: internal")
	// ErrMethodNotAllowed and ErrUnsupportedMediaType: a call the client
	// never makes (a method the route does not take, a body not sent as
	// JSON), there for callers that build their own.
	ErrMethodNotAllowed     = errors.New("countersign: method_not_allowed")
	ErrUnsupportedMediaType = errors.New("countersign: unsupported_media_type")
)

// codes maps each error code to its sentinel.
var codes = map[string]error{
	"malformed_json":          ErrMalformedJSON,
	"invalid_request":         ErrInvalidRequest,
	"invalid_effect":          ErrInvalidEffect,
	"unknown_tool":            ErrUnknownTool,
	"denied_by_policy":        ErrDeniedByPolicy,
	"outcome_conflict":        ErrOutcomeConflict,
	"not_agent_executed":      ErrNotAgentExecuted,
	"key_reused":              ErrKeyReused,
	"pruned":                  ErrPruned,
	"unauthorized":            ErrUnauthorized,
	"too_large":               ErrTooLarge,
	"not_found":               ErrNotFound,
	"already_decided":         ErrAlreadyDecided,
	"stale_card":              ErrStaleCard,
	"not_approver":            ErrNotApprover,
	"no_longer_approver":      ErrNoLongerApprover,
	"self_approval":           ErrSelfApproval,
	"already_resolved":        ErrAlreadyResolved,
	"callback_not_configured": ErrCallbackNotConfigured,
	"nothing_to_redrive":      ErrNothingToRedrive,
	"unavailable":             ErrUnavailable,
	"internal":                ErrInternal,
	"method_not_allowed":      ErrMethodNotAllowed,
	"unsupported_media_type":  ErrUnsupportedMediaType,
}

// APIError is a refusal from the hook: the stable code, the HTTP status, the
// sentence for a human and, where one field is at fault, its name (for
// invalid_effect, the JSON pointer of the failing part of the effect).
type APIError struct {
	Status  int
	Code    string
	Message string
	Field   string
	// Errors lists every value at fault when there are several
	// (invalid_effect); Field and Message are the first.
	Errors []Violation
	// RequestID names the request in the server's logs (Request-Id).
	RequestID string
	// RetryAfter is the wait the answer asked for (503), or 0.
	RetryAfter time.Duration
	// FinalStatus is, for pruned, how the key's request ended (rejected,
	// expired, cancelled, succeeded or failed).
	FinalStatus string
	// Tools are, for unknown_tool, the tools the agent may use.
	Tools []string
	// Key and Tier are, for denied_by_policy, the denied request's key
	// (Get finds it, rejected by "policy:"+Tier) and the rule that denied it.
	Key  string
	Tier string
}

// Error reads "countersign: code (status) at field: message (request_id
// req_…)"; the request id is what to quote to whoever runs the server. An
// answer without the hook's error body (a proxy's page) reads "countersign:
// HTTP status: …".
func (e *APIError) Error() string {
	msg := fmt.Sprintf("countersign: %s (%d)", e.Code, e.Status)
	if e.Code == "" {
		msg = fmt.Sprintf("countersign: HTTP %d", e.Status)
	}
	if e.Field != "" {
		msg += " at " + e.Field
	}
	msg += ": " + e.Message
	if e.RequestID != "" {
		msg += " (request_id " + e.RequestID + ")"
	}
	return msg
}

// Is reports whether target is the sentinel of e's code.
func (e *APIError) Is(target error) bool {
	sentinel, ok := codes[e.Code]
	return ok && sentinel == target
}
