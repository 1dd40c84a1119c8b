package executor

import (
	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/store"
)

// Codes the executor itself records, whatever the sender.
const (
	CodeExhausted        = "attempts_exhausted" // retryable, but max_attempts reached
	CodeSnapshotMismatch = "snapshot_mismatch"  // stored bytes do not hash to the approved hash
	CodeApprovalExpired  = "approval_expired"   // decision older than approval_ttl
	CodePrecondition     = "precondition_failed"
	CodePolicyStricter   = "policy_stricter"  // the policy in force denies the write or asks more approvals
	CodePolicyUnchecked  = "policy_unchecked" // released unsent: the policy in force could not be re-checked
	CodeExecuteChanged   = "execute_changed"  // approved for its agent to perform; the tool now dispatches
	CodeClaimTimeout     = store.CodeClaimTimeout
	CodeClaimTooShort    = "claim_too_short" // released unsent: the claim would end mid-send
	CodeNotDone          = "verified_not_done"
	CodeUnverifiable     = "unverifiable"
)

// Codes of a transport failure, which senders record (see package sender).
const (
	CodeConnectionRefused = sender.CodeConnectionRefused
	CodeConnectionFailed  = sender.CodeConnectionFailed
	CodeSendTimeout       = sender.CodeSendTimeout
	CodeConnectionLost    = sender.CodeConnectionLost
)
