package wire

import (
	"encoding/json"
	"time"
)

// Status is a request's review status.
type Status string

// Request statuses (docs/STATES.md).
const (
	StatusPending   Status = "pending"
	StatusApproved  Status = "approved"
	StatusRejected  Status = "rejected"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
	// StatusEdited: an approver edited the effect and approved the edit,
	// a new request (Request.SupersededBy); this one never runs.
	StatusEdited Status = "edited"
)

// ExecState is the state of a request's execution.
type ExecState string

// Execution states (docs/STATES.md).
const (
	ExecReady       ExecState = "ready"
	ExecClaimed     ExecState = "claimed"
	ExecSucceeded   ExecState = "succeeded"
	ExecFailed      ExecState = "failed"
	ExecUnknown     ExecState = "unknown"
	ExecNeedsReview ExecState = "needs_review"
	ExecSuperseded  ExecState = "superseded"
)

// Request is a request as countersign represents it (README.md, "Agent
// API").
type Request struct {
	ID           string          `json:"id"`
	Key          string          `json:"key"`
	KeyShort     string          `json:"key_short"`
	Status       Status          `json:"status"`
	Round        int             `json:"round"`
	RunID        string          `json:"run_id"`
	Step         json.RawMessage `json:"step"`
	Tool         string          `json:"tool"`
	Effect       json.RawMessage `json:"effect"`
	Summary      string          `json:"summary"`
	Reason       string          `json:"reason"`
	RequestedBy  string          `json:"requested_by"`
	RequestedFor string          `json:"requested_for,omitempty"`
	PayloadHash  string          `json:"payload_hash"`
	CreatedAt    time.Time       `json:"created_at"`
	ExpiresAt    time.Time       `json:"expires_at"`
	Decision     *Decision       `json:"decision"`
	Execution    *Execution      `json:"execution"`
	// Settled is true once the outcome can no longer change: rejected,
	// expired, cancelled, edited, or an execution that succeeded or failed.
	Settled bool `json:"settled"`
	// Version grows with every change of the fields above; GET
	// ?since=N answers once it is past N.
	Version int64 `json:"version"`
	// Callback is the newest callback delivery to the agent, if one was
	// sent. Its progress does not move Version.
	Callback *Callback `json:"callback"`
	// Policy is how the request's rounds are decided, frozen when it was
	// stored; Votes are the current round's votes, oldest first.
	Policy RequestPolicy `json:"policy"`
	Votes  []Vote        `json:"votes"`
	// Receipt is the signed receipt of an agent-executed tool's approval
	// (a compact JWS, package receipt): the agent sends it to its provider
	// in Countersign-Receipt with the write. Absent otherwise.
	Receipt string `json:"receipt,omitempty"`
	// SupersededBy is the key of the approver's edit that replaced this
	// request (status edited): the write that may run is that request's.
	// Supersedes is the key of the request this one is an edit of. Each is
	// absent when there is none.
	SupersededBy string `json:"superseded_by,omitempty"`
	Supersedes   string `json:"supersedes,omitempty"`

	// Replayed is not in the body: a client sets it when POST found the
	// key already stored (200 with Idempotent-Replayed) rather than
	// creating it (201).
	Replayed bool `json:"-"`
}

// Outcome is the body of POST /v1/requests/{ref}/outcome: how an
// agent-executed write the agent performed itself went.
type Outcome struct {
	// Status is succeeded or failed.
	Status string `json:"status"`
	// ProviderRef is the provider's id of the write, if it gave one.
	ProviderRef string `json:"provider_ref,omitempty"`
	// Detail says more, for a failure above all.
	Detail string `json:"detail,omitempty"`
}

// The statuses an agent reports.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
)

// AwaitsOutcome reports whether the request waits for its agent: an
// agent-executed write that was approved (it carries the receipt) and whose
// outcome the agent has not reported.
func (r *Request) AwaitsOutcome() bool { return r.Receipt != "" && !r.Settled }

// Succeeded reports whether the write happened.
func (r *Request) Succeeded() bool {
	return r.Execution != nil && r.Execution.State == ExecSucceeded
}

// Decision is the standing decision of the request's latest decided round.
type Decision struct {
	Verdict string    `json:"verdict"` // approve or reject
	By      string    `json:"by"`
	At      time.Time `json:"at"`
	Via     string    `json:"via"`
	Round   int       `json:"round"`
	// Reason is the deciding reviewer's words; "" when none were asked for
	// or given.
	Reason string `json:"reason"`
	// Retry, on a reject, says what the rejection means for an agent that
	// would try again (RetryRejected, RetryDenied); absent on an approval.
	Retry string `json:"retry,omitempty"`
}

// What a rejection means for a retry, as Decision.Retry says it: a
// reviewer's reject holds for the intent (its key), a policy's deny for
// the write whatever its step.
const (
	RetryRejected = "Posting the same intent again returns this rejection and asks nobody. " +
		"To ask again, change what was refused and post it with a new step."
	RetryDenied = "The policy denies this write under any step: posting it again, or with a new step, is denied again. " +
		"Only a different effect, or a change to the policy, can pass."
)

// RequestPolicy is how a request's rounds are decided.
type RequestPolicy struct {
	// Verdict is the policy's before any review: allow (decided by policy,
	// no human), deny (refused by policy) or ask (a round of approvals).
	Verdict string `json:"verdict"`
	// Approvals is how many distinct approvers a round needs; 0 when the
	// policy decided alone.
	Approvals int `json:"approvals"`
	// Approvers are who may vote: Slack user and user-group ids, or local
	// reviewers.
	Approvers []string `json:"approvers"`
	// Tier is the index of the tool's tier that matched the effect, or nil
	// when none did and the tool's own policy applies.
	Tier *int `json:"tier"`
	// TierName names the rule that decided: a tier's name, or "default"
	// for the tool's own; Version is the digest of the tool's rules when
	// the request arrived. Both are "" on requests older than policies.
	TierName string `json:"tier_name"`
	Version  string `json:"version"`
}

// Vote is one reviewer's vote in a request's round.
type Vote struct {
	By      string    `json:"by"`
	Verdict string    `json:"verdict"` // approve or reject
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
}

// Execution is the request's latest execution.
type Execution struct {
	State       ExecState `json:"state"`
	Attempts    int       `json:"attempts"`
	Code        string    `json:"code,omitempty"`
	ProviderRef string    `json:"provider_ref,omitempty"`
	Response    *Response `json:"response,omitempty"`
}

// Response is the provider's last answer: its body as JSON, or as a JSON
// string when it was not JSON.
type Response struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}

// Callback is where a request's newest callback delivery stands.
type Callback struct {
	// State is pending, delivered or failed; in a callback's own body,
	// delivering (the delivery it arrives in).
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	// LastStatus is the status the agent's endpoint last answered, if any.
	LastStatus *int `json:"last_status"`
}

// RequestPage is the answer of GET /v1/requests: requests newest first,
// each as GET /v1/requests/{ref} represents it, and the cursor that
// continues after the last of them (null when no request follows).
type RequestPage struct {
	Data       []Request `json:"data"`
	NextCursor *string   `json:"next_cursor"`
}
