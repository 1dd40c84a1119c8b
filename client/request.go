package client

import "github.com/countersign/countersign/wire"

// The representation is package wire's, written once for the server and
// its clients; these names keep the client's own.
type (
	// Status is a request's review status.
	Status = wire.Status
	// ExecState is the state of a request's execution.
	ExecState = wire.ExecState
	// Request is a request as countersign represents it; Succeeded reports
	// whether its write happened.
	Request = wire.Request
	// Decision is the standing decision of the request's latest decided
	// round.
	Decision = wire.Decision
	// RequestPolicy is how a request's rounds are decided.
	RequestPolicy = wire.RequestPolicy
	// Vote is one reviewer's vote in a request's round.
	Vote = wire.Vote
	// Execution is the request's latest execution.
	Execution = wire.Execution
	// Response is the provider's last answer.
	Response = wire.Response
	// Callback is where a request's newest callback delivery stands.
	Callback = wire.Callback
	// Tool is a tool an agent may request.
	Tool = wire.Tool
	// Policy is a tool's approval policy.
	Policy = wire.Policy
	// Violation is one value at fault: its JSON pointer and why.
	Violation = wire.Violation
)

// Request statuses.
const (
	StatusPending   = wire.StatusPending
	StatusApproved  = wire.StatusApproved
	StatusRejected  = wire.StatusRejected
	StatusExpired   = wire.StatusExpired
	StatusCancelled = wire.StatusCancelled
	StatusEdited    = wire.StatusEdited
)

// Execution states (docs/STATES.md).
const (
	ExecReady       = wire.ExecReady
	ExecClaimed     = wire.ExecClaimed
	ExecSucceeded   = wire.ExecSucceeded
	ExecFailed      = wire.ExecFailed
	ExecUnknown     = wire.ExecUnknown
	ExecNeedsReview = wire.ExecNeedsReview
	ExecSuperseded  = wire.ExecSuperseded
)

// The verdicts of a request's policy (RequestPolicy.Verdict): allowed
// without a human, refused (the intake answered ErrDeniedByPolicy), or
// asked of reviewers.
const (
	PolicyAllow = "allow"
	PolicyDeny  = "deny"
	PolicyAsk   = "ask"
)

// The Via of a decision made on arrival, with no one asked: by the tool's
// policy (Decision.By is "policy:<rule>") or by a reviewer's standing grant
// ("grant:<id>").
const (
	ViaPolicy = "policy"
	ViaGrant  = "grant"
)
