package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ExecState is where an approved write stands; values equal the SQL values.
type ExecState string

// Execution states (see docs/STATES.md).
const (
	ExecReady       ExecState = "ready"
	ExecClaimed     ExecState = "claimed"
	ExecSucceeded   ExecState = "succeeded"
	ExecFailed      ExecState = "failed"
	ExecUnknown     ExecState = "unknown"
	ExecNeedsReview ExecState = "needs_review"
	ExecSuperseded  ExecState = "superseded"
)

// Execution is the executor's record of one approved round of a request.
type Execution struct {
	ID             int64      `db:"id"`
	RequestID      string     `db:"request_id"`
	DecisionID     int64      `db:"decision_id"`
	Key            string     `db:"key"`
	Tool           string     `db:"tool"`
	Snapshot       []byte     `db:"snapshot"`
	SnapshotHash   string     `db:"snapshot_hash"`
	State          ExecState  `db:"state"`
	Attempts       int        `db:"attempts"`
	MaxAttempts    int        `db:"max_attempts"`
	NextAttemptAt  time.Time  `db:"next_attempt_at"`
	ClaimedBy      *string    `db:"claimed_by"`
	ClaimExpiresAt *time.Time `db:"claim_expires_at"`
	LastCode       *string    `db:"last_code"`
	LastError      *string    `db:"last_error"`
	ResponseStatus *int       `db:"response_status"`
	ResponseBody   []byte     `db:"response_body"`
	ProviderRef    *string    `db:"provider_ref"`
	ApprovedAt     time.Time  `db:"approved_at"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

// ExecutionColumns lists the executions columns in Execution's field names,
// for queries in other packages that scan with pgx.RowToStructByName.
const ExecutionColumns = `id, request_id::text AS request_id, decision_id, key, tool, snapshot, snapshot_hash, state,
	attempts, max_attempts, next_attempt_at, claimed_by, claim_expires_at, last_code, last_error,
	response_status, response_body, provider_ref, approved_at, created_at, updated_at`

// LatestExecution returns the newest execution of a request.
func LatestExecution(ctx context.Context, db DBTX, requestID string) (Execution, error) {
	rows, err := db.Query(ctx, `SELECT `+ExecutionColumns+` FROM executions WHERE request_id = $1 ORDER BY id DESC LIMIT 1`, requestID)
	if err != nil {
		return Execution{}, fmt.Errorf("reading execution: %w", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Execution])
	return e, translate(err)
}
