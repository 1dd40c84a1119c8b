package embedded

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/store"
)

// LatestExecution returns the newest execution of a request.
func (s *Store) LatestExecution(ctx context.Context, requestID string) (store.Execution, error) {
	return latestExecution(ctx, s.reader, requestID)
}

func latestExecution(ctx context.Context, q querier, requestID string) (store.Execution, error) {
	id, _ := canonicalID(requestID)
	return scanExecution(q.QueryRowContext(ctx,
		`SELECT `+executionColumns+` FROM executions WHERE request_id = ? ORDER BY id DESC LIMIT 1`, id))
}

// ExecutionsFor returns every execution of a request, oldest first.
func (s *Store) ExecutionsFor(ctx context.Context, requestID string) ([]store.Execution, error) {
	id, _ := canonicalID(requestID)
	rows, err := s.reader.QueryContext(ctx, `SELECT `+executionColumns+` FROM executions WHERE request_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("reading executions: %w", translate(err))
	}
	out, err := collect(rows, scanExecution)
	if err != nil {
		return nil, fmt.Errorf("reading executions: %w", translate(err))
	}
	return out, nil
}

// ExecutionForDecision returns the newest execution created by a decision.
func (s *Store) ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error) {
	return scanExecution(s.reader.QueryRowContext(ctx,
		`SELECT `+executionColumns+` FROM executions WHERE decision_id = ? ORDER BY id DESC LIMIT 1`, decisionID))
}

// CountUnsettled returns how many executions are unknown and how many wait
// for a human.
func (s *Store) CountUnsettled(ctx context.Context) (unknown, needsReview int, err error) {
	err = s.reader.QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM executions WHERE state = 'unknown'),
	(SELECT count(*) FROM executions WHERE state = 'needs_review')`).Scan(&unknown, &needsReview)
	if err != nil {
		return 0, 0, fmt.Errorf("counting unsettled executions: %w", translate(err))
	}
	return unknown, needsReview, nil
}
