package executor

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/countersign/countersign/store"
)

// Resolution actions, equal to the card buttons' action_ids.
const (
	ActionMarkSucceeded = "mark_succeeded"
	ActionMarkFailed    = "mark_failed"
	ActionResend        = "resend"
)

// Resolve records a human's answer to an execution in needs_review: mark it
// succeeded, mark it failed, or resend it under the same key. Each is one
// transaction with its audit event (actor: by) and card update. A resend puts
// the same row back to ready and raises its attempt cap to allow one more
// attempt if the cap was reached, since a human asked for exactly one. The
// caller has authorized by. It fails with ErrNotNeedsReview when the
// execution is in any other state, ErrUnknownAction, or store.ErrNotFound.
func (e *Executor) Resolve(ctx context.Context, requestID string, executionID int64, action string, by string) error {
	p := store.ResolveParams{RequestID: requestID, ExecutionID: executionID, Action: action, By: by, Now: e.now()}
	switch action {
	case ActionMarkSucceeded:
		p.To, p.Code = store.ExecSucceeded, "marked_succeeded"
	case ActionMarkFailed:
		p.To, p.Code = store.ExecFailed, "marked_failed"
	case ActionResend:
		p.To = store.ExecReady
	default:
		return fmt.Errorf("%w: %q", ErrUnknownAction, action)
	}
	resolved, err := e.db.Resolve(ctx, p)
	if err != nil {
		return err
	}
	if !resolved {
		return ErrNotNeedsReview
	}
	if endsExecution(p.To) {
		e.metrics.Executions.WithLabelValues(string(p.To), p.Code).Inc()
	}
	e.logger.Info("execution resolved by a human", slog.Int64("execution_id", executionID),
		slog.String("request_id", requestID), slog.String("action", action), slog.String("by", by))
	return nil
}
