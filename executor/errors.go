package executor

import "errors"

// Sentinel errors of the executor.
var (
	// ErrNotNeedsReview: a human resolution was asked of an execution that is
	// not waiting for one.
	ErrNotNeedsReview = errors.New("execution is not in needs_review")
	// ErrUnknownAction: Resolve was given an action other than mark_succeeded,
	// mark_failed or resend.
	ErrUnknownAction = errors.New("unknown resolution action")
	// ErrStopped: the executor was asked to claim after Stop.
	ErrStopped = errors.New("executor stopped")
)
