package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Transition moves one execution out of the state the caller holds it in,
// with what to record on the row, in the audit trail and in the outbox.
type Transition struct {
	ExecutionID int64
	// Attempt is the attempts value the caller saw. A row whose count moved on
	// (it was reclaimed) is not touched, so a stale worker never overwrites a
	// newer outcome.
	Attempt int
	To      ExecState
	// Status, Body and ProviderRef record the provider's last answer; zero
	// values keep what the row has.
	Status      int
	Body        []byte
	ProviderRef string
	// Code and Error replace last_code and last_error; empty clears them.
	Code  string
	Error string
	// Delay sets next_attempt_at to now plus Delay.
	Delay     time.Duration
	Event     string
	EventData map[string]any
	// Reply, when set, also queues a thread reply with this reason.
	Reply string
}

// TransitionParams names who moves the rows and from which state.
type TransitionParams struct {
	From ExecState
	// Worker, when set, must be the row's claimed_by (for From = claimed).
	Worker string
	Actor  string
	Now    *time.Time
	// AsyncCommit lets the commit return before it is durable. Only for
	// outcomes that can be verified later: a lost outcome leaves its claim to
	// expire and be reconciled like any other unknown.
	AsyncCommit bool
}

// Applied is a transition that took effect.
type Applied struct {
	ExecutionID int64  `db:"id"`
	RequestID   string `db:"request_id"`
	Round       int    `db:"round"`
}

// TransitionExecutions applies a batch of transitions in one statement: each
// row moves only if it is still in p.From with the attempt count the caller
// saw (and, for claims, still held by p.Worker), and each move writes its audit
// event, its card update and, when asked, a thread reply. It returns the
// transitions that took effect.
func TransitionExecutions(ctx context.Context, db DBTX, p TransitionParams, ts []Transition) ([]Applied, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	n := len(ts)
	var (
		ids      = make([]int64, n)
		attempts = make([]int32, n)
		states   = make([]string, n)
		statuses = make([]int32, n)
		bodies   = make([][]byte, n)
		refs     = make([]string, n)
		codes    = make([]string, n)
		errs     = make([]string, n)
		delays   = make([]int64, n)
		kinds    = make([]string, n)
		data     = make([]string, n)
		replies  = make([]string, n)
	)
	for i, t := range ts {
		ids[i], attempts[i], states[i] = t.ExecutionID, int32(t.Attempt), string(t.To)
		statuses[i], bodies[i], refs[i] = int32(t.Status), t.Body, t.ProviderRef
		codes[i], errs[i], delays[i] = t.Code, t.Error, t.Delay.Microseconds()
		kinds[i], replies[i] = t.Event, t.Reply
		d := t.EventData
		if d == nil {
			d = map[string]any{}
		}
		raw, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("encoding event data: %w", err)
		}
		data[i] = string(raw)
	}
	rows, err := db.Query(ctx, `
WITH i AS (
	SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::int[], $5::bytea[], $6::text[],
		$7::text[], $8::text[], $9::bigint[], $10::text[], $11::text[], $12::text[])
		AS i(id, attempt, state, status, body, ref, code, err, delay_us, kind, data, reply)
), u AS (
	UPDATE executions e SET
		state = i.state,
		claimed_by = CASE WHEN i.state = 'claimed' THEN e.claimed_by END,
		claim_expires_at = CASE WHEN i.state = 'claimed' THEN e.claim_expires_at END,
		next_attempt_at = coalesce($13::timestamptz, now()) + i.delay_us * interval '1 microsecond',
		response_status = coalesce(nullif(i.status, 0), e.response_status),
		response_body = coalesce(i.body, e.response_body),
		provider_ref = coalesce(nullif(i.ref, ''), e.provider_ref),
		last_code = nullif(i.code, ''),
		last_error = nullif(i.err, ''),
		updated_at = coalesce($13::timestamptz, now())
	FROM i
	WHERE e.id = i.id AND e.state = $14 AND e.attempts = i.attempt
		AND ($15 = '' OR e.claimed_by = $15)
	RETURNING e.id, e.request_id, e.decision_id, e.updated_at, i.kind, i.data, i.reply
), r AS (
	SELECT u.*, (SELECT d.round FROM decisions d WHERE d.id = u.decision_id) AS round FROM u
), ev AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT request_id, updated_at, $16, kind, data::jsonb FROM r
), ob AS (
	INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	SELECT 'update_card', request_id, round, '{}', updated_at, updated_at FROM r
	UNION ALL
	SELECT 'thread_reply', request_id, round, jsonb_build_object('reason', reply), updated_at, updated_at
	FROM r WHERE reply <> ''
)
SELECT id, request_id::text AS request_id, round FROM r`,
		ids, attempts, states, statuses, bodies, refs, codes, errs, delays, kinds, data, replies,
		p.Now, string(p.From), p.Worker, p.Actor)
	if err != nil {
		return nil, fmt.Errorf("recording outcomes: %w", err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowToStructByName[Applied])
	if err != nil {
		return nil, fmt.Errorf("recording outcomes: %w", translate(err))
	}
	return applied, nil
}
