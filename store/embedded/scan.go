package embedded

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// at scans a time stored as unix microseconds (values.go); NULL is nil when
// ptr is set.
type at struct {
	t   *time.Time
	ptr **time.Time
}

func (a at) Scan(src any) error {
	us, ok := src.(int64)
	switch {
	case src == nil && a.ptr != nil:
		*a.ptr = nil
	case !ok:
		return fmt.Errorf("reading a time: got %T", src)
	case a.ptr != nil:
		t := fromMicros(us)
		*a.ptr = &t
	default:
		*a.t = fromMicros(us)
	}
	return nil
}

// jsonText scans JSON stored as text into v.
type jsonText struct{ v any }

func (j jsonText) Scan(src any) error {
	switch s := src.(type) {
	case string:
		return json.Unmarshal([]byte(s), j.v)
	case []byte:
		return json.Unmarshal(s, j.v)
	}
	return fmt.Errorf("reading JSON: got %T", src)
}

// scanInto scans row into dest, fields of v, and returns v (zero on error).
func scanInto[T any](what string, row scanner, v *T, dest ...any) (T, error) {
	if err := row.Scan(dest...); err != nil {
		var zero T
		return zero, wrap(what, err)
	}
	return *v, nil
}

func scanRequest(row scanner) (store.Request, error) { return scanRequestWith(row) }

// scanRequestWith scans {{request_columns}} (queries.sql) followed by extra columns.
func scanRequestWith(row scanner, extra ...any) (store.Request, error) {
	var r store.Request
	return scanInto("reading request", row, &r, append([]any{&r.ID, &r.Key, &r.BasisHash, &r.RunID, jsonText{&r.Step}, &r.Tool,
		&r.Snapshot, &r.PayloadHash, &r.Summary, &r.Reason, &r.RequestedBy, &r.RequestedFor, &r.Status, &r.Round,
		at{t: &r.ExpiresAt}, &r.CardSurface, &r.CardRef, at{t: &r.CreatedAt}, at{t: &r.UpdatedAt}, &r.Version,
		jsonText{&r.Policy}, at{t: &r.RoundStartedAt}, &r.Supersedes, &r.SupersededBy}, extra...)...)
}

func scanExecution(row scanner) (store.Execution, error) { return scanExecutionWith(row) }

// scanExecutionWith scans {{execution_columns}} (queries.sql) followed by extra columns.
func scanExecutionWith(row scanner, extra ...any) (store.Execution, error) {
	var e store.Execution
	return scanInto("reading execution", row, &e, append([]any{&e.ID, &e.RequestID, &e.DecisionID, &e.Key, &e.Tool, &e.Snapshot,
		&e.SnapshotHash, &e.State, &e.Attempts, &e.MaxAttempts, at{t: &e.NextAttemptAt}, &e.ClaimedBy,
		at{ptr: &e.ClaimExpiresAt}, &e.LastCode, &e.LastError, &e.ResponseStatus, &e.ResponseBody, &e.ProviderRef,
		at{t: &e.ApprovedAt}, at{t: &e.CreatedAt}, at{t: &e.UpdatedAt}, &e.VerifyFirst}, extra...)...)
}

func scanDecision(row scanner) (store.Decision, error) {
	var d store.Decision
	return scanInto("reading decision", row, &d, &d.ID, &d.RequestID, &d.Round, &d.Verdict, &d.DecidedBy, &d.Via,
		&d.PayloadHashSeen, at{t: &d.DecidedAt}, &d.Reason)
}

func scanVote(row scanner) (store.Vote, error) {
	var v store.Vote
	return scanInto("reading vote", row, &v, &v.ID, &v.RequestID, &v.Round, &v.Voter, &v.Verdict, &v.Reason, &v.Via,
		&v.PayloadHashSeen, at{t: &v.VotedAt})
}

func scanCard(row scanner) (store.Card, error) {
	var c store.Card
	return scanInto("reading card", row, &c, &c.RequestID, &c.Round, &c.Surface, &c.Ref, &c.RenderedState, &c.Settled, at{t: &c.PostedAt})
}

// scanCallback scans {{callback_columns}} (queries.sql).
func scanCallback(row scanner) (store.Callback, error) {
	var c store.Callback
	return scanInto("reading callback", row, &c, &c.ID, &c.DeliveryID, &c.RequestID, &c.Agent, &c.Event, &c.State,
		&c.Attempts, at{t: &c.NextAttemptAt}, at{t: &c.GiveUpAt}, &c.LastStatus, &c.LastError, at{t: &c.CreatedAt})
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
