package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Claim is an execution the caller now holds, with the round of the decision
// that approved it and the database clock at the moment of the claim.
type Claim struct {
	Execution
	Round int       `db:"round"`
	DBNow time.Time `db:"db_now"`
}

// ClaimParams says what a worker may claim and for how long.
type ClaimParams struct {
	Worker string
	Limit  int
	// ClaimTimeouts maps each tool the worker can dispatch to its claim
	// timeout; rows of other tools are left for a worker that knows them.
	ClaimTimeouts map[string]time.Duration
	Now           *time.Time
}

// ClaimExecutions moves up to Limit due ready executions to claimed in one
// statement, counting the attempt on the row and writing each claim's audit
// event and card update. Rows another worker holds locked are skipped, so any
// number of workers can claim at once and none gets the same row.
func ClaimExecutions(ctx context.Context, db DBTX, p ClaimParams) ([]Claim, error) {
	if p.Limit <= 0 || len(p.ClaimTimeouts) == 0 {
		return nil, nil
	}
	tools := make([]string, 0, len(p.ClaimTimeouts))
	micros := make([]int64, 0, len(p.ClaimTimeouts))
	for name, d := range p.ClaimTimeouts {
		tools = append(tools, name)
		micros = append(micros, d.Microseconds())
	}
	rows, err := db.Query(ctx, `
WITH due AS (
	SELECT id FROM executions
	WHERE state = 'ready' AND next_attempt_at <= coalesce($1::timestamptz, now()) AND tool = ANY($3::text[])
	ORDER BY next_attempt_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), c AS (
	-- ANY(ARRAY(…)) and the scalar subqueries keep every lookup on a primary
	-- key: a join here makes the planner scan the whole table per claim.
	UPDATE executions e SET state = 'claimed', claimed_by = $4, attempts = e.attempts + 1,
		claim_expires_at = coalesce($1::timestamptz, now()) + (
			SELECT t.us FROM unnest($3::text[], $5::bigint[]) AS t(name, us) WHERE t.name = e.tool
		) * interval '1 microsecond',
		updated_at = coalesce($1::timestamptz, now())
	WHERE e.id = ANY(ARRAY(SELECT id FROM due)) AND e.state = 'ready'
	RETURNING e.*
), r AS (
	SELECT c.*, (SELECT d.round FROM decisions d WHERE d.id = c.decision_id) AS decision_round FROM c
), ev AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT request_id, updated_at, 'executor:' || claimed_by, 'claimed',
		jsonb_build_object('attempt', attempts, 'execution_id', id, 'claim_expires_at', claim_expires_at)
	FROM r
), ob AS (
	INSERT INTO outbox (kind, request_id, round, next_attempt_at, created_at)
	SELECT 'update_card', request_id, decision_round, updated_at, updated_at FROM r
)
SELECT `+ExecutionColumns+`, decision_round AS round, coalesce($1::timestamptz, now()) AS db_now FROM r`,
		p.Now, p.Limit, tools, p.Worker, micros)
	if err != nil {
		return nil, fmt.Errorf("claiming executions: %w", err)
	}
	claims, err := pgx.CollectRows(rows, pgx.RowToStructByName[Claim])
	if err != nil {
		return nil, fmt.Errorf("claiming executions: %w", translate(err))
	}
	return claims, nil
}
