package sender

// Outcome is what the executor does with an attempt.
type Outcome string

// Outcomes of one attempt (docs/EXECUTOR.md, "Classification table").
const (
	OutcomeSucceeded Outcome = "succeeded" // done
	OutcomeRetry     Outcome = "retry"     // certainly not done; try again under the same key
	OutcomeVerify    Outcome = "verify"    // may be done; ask the provider before anything else
	OutcomeFatal     Outcome = "fatal"     // refused; a retry would be refused too
	OutcomeReview    Outcome = "review"    // an answer nobody taught us; a human decides
)

// Codes of a transport failure, for any sender that reaches its provider
// over a connection.
const (
	CodeConnectionRefused = "connection_refused" // nothing was written
	CodeConnectionFailed  = "connection_failed"  // nothing was written
	CodeSendTimeout       = "send_timeout"       // written, no answer in time
	CodeConnectionLost    = "connection_lost"    // written, connection dropped
)
