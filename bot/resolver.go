package bot

import (
	"context"
	"errors"
	"strings"
)

// Actions on a card whose write needs a human (docs/STATES.md).
const (
	ActionMarkSucceeded = "mark_succeeded"
	ActionMarkFailed    = "mark_failed"
	ActionResend        = "resend"
)

// Resolver settles an execution in needs_review as a reviewer chose: it
// marks it succeeded or failed, or sends it again under the same key. The
// executor implements it. An execution no longer in needs_review is an error
// that wraps ErrAlreadyResolved or says "not in needs_review".
type Resolver interface {
	Resolve(ctx context.Context, requestID string, executionID int64, action string, by string) error
}

// ErrAlreadyResolved says the execution left needs_review before the click.
var ErrAlreadyResolved = errors.New("execution is not in needs_review")

func alreadyResolved(err error) bool {
	return errors.Is(err, ErrAlreadyResolved) || strings.Contains(err.Error(), "not in needs_review")
}
