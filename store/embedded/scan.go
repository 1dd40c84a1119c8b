package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/store"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

func scanRequest(row scanner) (store.Request, error) { return scanRequestWith(row) }

// scanRequestWith scans {{request_columns}} (queries.sql) followed by extra columns.
func scanRequestWith(row scanner, extra ...any) (store.Request, error) {
	var (
		r                         store.Request
		step, policy              string
		expires, created, updated int64
	)
	err := row.Scan(append([]any{&r.ID, &r.Key, &r.BasisHash, &r.RunID, &step, &r.Tool, &r.Snapshot, &r.PayloadHash,
		&r.Summary, &r.Reason, &r.RequestedBy, &r.RequestedFor, &r.Status, &r.Round, &expires,
		&r.CardChannel, &r.CardTS, &created, &updated, &r.Version, &policy}, extra...)...)
	if err != nil {
		return store.Request{}, wrap("reading request", err)
	}
	if err := json.Unmarshal([]byte(policy), &r.Policy); err != nil {
		return store.Request{}, fmt.Errorf("reading the policy of request %s: %w", r.ID, err)
	}
	r.Step = json.RawMessage(step)
	r.ExpiresAt, r.CreatedAt, r.UpdatedAt = fromMicros(expires), fromMicros(created), fromMicros(updated)
	return r, nil
}

func scanDecision(row scanner) (store.Decision, error) {
	var (
		d  store.Decision
		at int64
	)
	if err := row.Scan(&d.ID, &d.RequestID, &d.Round, &d.Verdict, &d.DecidedBy, &d.Via, &d.PayloadHashSeen, &at, &d.Reason); err != nil {
		return store.Decision{}, wrap("reading decision", err)
	}
	d.DecidedAt = fromMicros(at)
	return d, nil
}

func scanExecution(row scanner) (store.Execution, error) { return scanExecutionWith(row) }

// scanExecutionWith scans {{execution_columns}} (queries.sql) followed by extra columns.
func scanExecutionWith(row scanner, extra ...any) (store.Execution, error) {
	var (
		e                                store.Execution
		next, approved, created, updated int64
		claimedBy, code, msg, ref        sql.NullString
		claimExpires, status             sql.NullInt64
	)
	dest := append([]any{&e.ID, &e.RequestID, &e.DecisionID, &e.Key, &e.Tool, &e.Snapshot, &e.SnapshotHash, &e.State,
		&e.Attempts, &e.MaxAttempts, &next, &claimedBy, &claimExpires, &code, &msg,
		&status, &e.ResponseBody, &ref, &approved, &created, &updated}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Execution{}, wrap("reading execution", err)
	}
	e.NextAttemptAt, e.ApprovedAt = fromMicros(next), fromMicros(approved)
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	e.ClaimedBy, e.LastCode, e.LastError, e.ProviderRef = stringPtr(claimedBy), stringPtr(code), stringPtr(msg), stringPtr(ref)
	if claimExpires.Valid {
		t := fromMicros(claimExpires.Int64)
		e.ClaimExpiresAt = &t
	}
	if status.Valid {
		s := int(status.Int64)
		e.ResponseStatus = &s
	}
	return e, nil
}

func stringPtr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// collect scans every row of a query with scan and closes them; err is the
// query's.
func collect[T any](what string, scan func(scanner) (T, error), rows *sql.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, wrap(what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, wrap(what, err)
		}
		out = append(out, v)
	}
	return out, wrap(what, rows.Err())
}

// exists runs a read of one boolean.
func (e executor) exists(ctx context.Context, what, query string, args ...any) (bool, error) {
	var ok bool
	err := e.read().QueryRowContext(ctx, query, args...).Scan(&ok)
	return ok, wrap(what, err)
}

func scanVote(row scanner) (store.Vote, error) {
	var (
		v  store.Vote
		at int64
	)
	if err := row.Scan(&v.ID, &v.RequestID, &v.Round, &v.Voter, &v.Verdict, &v.Reason, &v.Via, &v.PayloadHashSeen, &at); err != nil {
		return store.Vote{}, wrap("reading vote", err)
	}
	v.VotedAt = fromMicros(at)
	return v, nil
}
