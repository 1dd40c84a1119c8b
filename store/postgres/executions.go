package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

const executionColumns = `id, request_id::text AS request_id, decision_id, key, tool, snapshot, snapshot_hash, state,
	attempts, max_attempts, next_attempt_at, claimed_by, claim_expires_at, last_code, last_error,
	response_status, response_body, provider_ref, approved_at, created_at, updated_at`

func (e executor) InsertExecution(ctx context.Context, x store.NewExecution) error {
	_, err := e.db.Exec(ctx, `
INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts, approved_at, next_attempt_at, created_at, updated_at)
SELECT id, $2, key, tool, snapshot, payload_hash, $3, $4, $4, $4, $4 FROM requests WHERE id = $1`,
		x.RequestID, x.DecisionID, x.MaxAttempts, x.At)
	return wrap("creating execution", err)
}

func (e executor) LatestExecution(ctx context.Context, requestID string) (store.Execution, error) {
	rows, err := e.db.Query(ctx, `SELECT `+executionColumns+` FROM executions WHERE request_id = $1 ORDER BY id DESC LIMIT 1`, requestID)
	return one[store.Execution]("reading execution", rows, err)
}

func (e executor) ExecutionsFor(ctx context.Context, requestID string) ([]store.Execution, error) {
	rows, err := e.db.Query(ctx, `SELECT `+executionColumns+` FROM executions WHERE request_id = $1 ORDER BY id`, requestID)
	return collect[store.Execution]("reading executions", rows, err)
}

func (e executor) ExecutionForDecision(ctx context.Context, decisionID int64) (store.Execution, error) {
	rows, err := e.db.Query(ctx, `SELECT `+executionColumns+` FROM executions WHERE decision_id = $1 ORDER BY id DESC LIMIT 1`, decisionID)
	return one[store.Execution]("reading execution", rows, err)
}

func (e executor) ExecutionExists(ctx context.Context, id int64, requestID string) (bool, error) {
	var exists bool
	err := e.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM executions WHERE id = $1 AND request_id = $2)`, id, requestID).Scan(&exists)
	return exists, wrap("reading execution", err)
}

// claimTimeouts splits the worker's tools and their claim timeouts into
// parallel arrays.
func claimTimeouts(p store.ClaimParams) (tools []string, micros []int64) {
	for name, d := range p.ClaimTimeouts {
		tools = append(tools, name)
		micros = append(micros, d.Microseconds())
	}
	return tools, micros
}

// claimCTE picks and claims the due rows ($1 now, $2 limit, $3 tools, $4
// worker, $5 timeouts) as r, with each one's decision round.
const claimCTE = `
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
)`

const claimSelect = `
SELECT ` + executionColumns + `, decision_round AS round, coalesce($1::timestamptz, now()) AS db_now FROM r`

func (e executor) ClaimExecutionRows(ctx context.Context, p store.ClaimParams) ([]store.Claim, error) {
	tools, micros := claimTimeouts(p)
	rows, err := e.db.Query(ctx, claimCTE+claimSelect, p.Now, p.Limit, tools, p.Worker, micros)
	return collect[store.Claim]("claiming executions", rows, err)
}

// ClaimExecutionsBatch is ClaimExecutions in one statement, with each
// claim's "claimed" event (actor executor:<worker>) and card update.
func (e executor) ClaimExecutionsBatch(ctx context.Context, p store.ClaimParams) ([]store.Claim, error) {
	tools, micros := claimTimeouts(p)
	rows, err := e.db.Query(ctx, claimCTE+`, ev AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT request_id, updated_at, 'executor:' || claimed_by, 'claimed',
		jsonb_build_object('attempt', attempts, 'execution_id', id, 'claim_expires_at', claim_expires_at)
	FROM r
), ob AS (
	INSERT INTO outbox (kind, request_id, round, next_attempt_at, created_at)
	SELECT 'update_card', request_id, decision_round, updated_at, updated_at FROM r
)`+claimSelect, p.Now, p.Limit, tools, p.Worker, micros)
	return collect[store.Claim]("claiming executions", rows, err)
}

func (e executor) TransitionExecutionRow(ctx context.Context, p store.TransitionParams, t store.Transition) (store.Applied, time.Time, bool, error) {
	var (
		a  store.Applied
		at time.Time
	)
	err := e.db.QueryRow(ctx, `
UPDATE executions e SET
	state = $3,
	claimed_by = CASE WHEN $3 = 'claimed' THEN e.claimed_by END,
	claim_expires_at = CASE WHEN $3 = 'claimed' THEN e.claim_expires_at END,
	next_attempt_at = coalesce($10::timestamptz, now()) + $9::bigint * interval '1 microsecond',
	response_status = coalesce(nullif($4::int, 0), e.response_status),
	response_body = coalesce($5::bytea, e.response_body),
	provider_ref = coalesce(nullif($6, ''), e.provider_ref),
	last_code = nullif($7, ''),
	last_error = nullif($8, ''),
	updated_at = coalesce($10::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.state = $11 AND e.attempts = $2 AND ($12 = '' OR e.claimed_by = $12) AND d.id = e.decision_id
RETURNING e.id, e.request_id::text, d.round, e.updated_at`,
		t.ExecutionID, t.Attempt, string(t.To), t.Status, t.Body, t.ProviderRef, t.Code, t.Error,
		t.Delay.Microseconds(), p.Now, string(p.From), p.Worker).Scan(&a.ExecutionID, &a.RequestID, &a.Round, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Applied{}, time.Time{}, false, nil
	}
	return a, at, err == nil, wrap("recording outcome", err)
}

// TransitionExecutionsBatch is TransitionExecutions in one statement, with
// each move's event (actor p.Actor), card update and thread reply.
func (e executor) TransitionExecutionsBatch(ctx context.Context, p store.TransitionParams, ts []store.Transition) ([]store.Applied, error) {
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
			return nil, wrap("encoding event data", err)
		}
		data[i] = string(raw)
	}
	rows, err := e.db.Query(ctx, `
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
SELECT id AS execution_id, request_id::text AS request_id, round FROM r`,
		ids, attempts, states, statuses, bodies, refs, codes, errs, delays, kinds, data, replies,
		p.Now, string(p.From), p.Worker, p.Actor)
	return collect[store.Applied]("recording outcomes", rows, err)
}

func (e executor) SupersedeExecution(ctx context.Context, p store.SupersedeParams) (store.Superseded, bool, error) {
	var s store.Superseded
	err := e.db.QueryRow(ctx, `
UPDATE executions e SET state = 'superseded', claimed_by = NULL, claim_expires_at = NULL,
	last_code = $4, last_error = $5, updated_at = coalesce($6::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.state = 'claimed' AND e.attempts = $2 AND e.claimed_by = $3 AND d.id = e.decision_id
RETURNING e.request_id::text, d.round, e.updated_at`,
		p.ExecutionID, p.Attempt, p.Worker, p.Code, p.Message, p.Now).Scan(&s.RequestID, &s.Round, &s.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Superseded{}, false, nil
	}
	return s, err == nil, wrap("superseding execution", err)
}

func (e executor) ResolveExecution(ctx context.Context, p store.ResolveParams) (store.Resolved, bool, error) {
	var r store.Resolved
	err := e.db.QueryRow(ctx, `
UPDATE executions e SET state = $3,
	last_code = coalesce(nullif($4, ''), e.last_code),
	max_attempts = CASE WHEN $3 = 'ready' THEN greatest(e.max_attempts, e.attempts + 1) ELSE e.max_attempts END,
	next_attempt_at = coalesce($5::timestamptz, now()),
	updated_at = coalesce($5::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.request_id = $2 AND e.state = 'needs_review' AND d.id = e.decision_id
RETURNING e.attempts, d.round, e.updated_at`,
		p.ExecutionID, p.RequestID, string(p.To), p.Code, p.Now).Scan(&r.Attempts, &r.Round, &r.At)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Resolved{}, false, nil
	}
	return r, err == nil, wrap("resolving execution", err)
}

func (e executor) ExpireClaimRows(ctx context.Context, now *time.Time, limit int) ([]store.ExpiredClaim, error) {
	rows, err := e.db.Query(ctx, `
WITH due AS (
	SELECT id, claimed_by FROM executions
	WHERE state = 'claimed' AND claim_expires_at <= coalesce($1::timestamptz, now())
	ORDER BY claim_expires_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE executions e SET state = 'unknown', claimed_by = NULL, claim_expires_at = NULL,
		next_attempt_at = coalesce($1::timestamptz, now()),
		last_code = 'claim_timeout', last_error = 'the claim expired before an outcome was recorded',
		updated_at = coalesce($1::timestamptz, now())
	FROM due WHERE e.id = due.id AND e.state = 'claimed'
	RETURNING e.id, e.request_id, e.decision_id, e.attempts, e.updated_at, due.claimed_by AS held_by
)
SELECT u.id AS execution_id, u.request_id::text AS request_id, d.round, u.attempts, u.held_by, u.updated_at AS at
FROM u JOIN decisions d ON d.id = u.decision_id ORDER BY u.id`, now, limit)
	return collect[store.ExpiredClaim]("expiring claims", rows, err)
}

func (e executor) LeaseUnknowns(ctx context.Context, now *time.Time, lease time.Duration, limit int) ([]store.Unknown, error) {
	rows, err := e.db.Query(ctx, `
WITH due AS (
	SELECT id FROM executions
	WHERE state = 'unknown' AND next_attempt_at <= coalesce($1::timestamptz, now())
	ORDER BY next_attempt_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE executions e SET next_attempt_at = coalesce($1::timestamptz, now()) + $2::bigint * interval '1 microsecond'
	FROM due WHERE e.id = due.id AND e.state = 'unknown'
	RETURNING e.*
)
SELECT `+executionColumns+`, coalesce($1::timestamptz, now()) AS db_now FROM u`, now, lease.Microseconds(), limit)
	return collect[store.Unknown]("leasing unknown executions", rows, err)
}

func (e executor) CountUnsettled(ctx context.Context) (unknown, needsReview int, err error) {
	err = e.db.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM executions WHERE state = 'unknown'),
	(SELECT count(*) FROM executions WHERE state = 'needs_review')`).Scan(&unknown, &needsReview)
	return unknown, needsReview, wrap("counting unsettled executions", err)
}

func (e executor) UnresolvedRequestIDs(ctx context.Context, limit int) ([]string, error) {
	rows, err := e.db.Query(ctx, `
SELECT id::text FROM (
	(SELECT request_id AS id, updated_at FROM executions WHERE state = 'unknown' ORDER BY next_attempt_at LIMIT $1)
	UNION ALL
	(SELECT request_id, updated_at FROM executions WHERE state = 'needs_review' ORDER BY updated_at LIMIT $1)
) u ORDER BY updated_at LIMIT $1`, limit)
	if err != nil {
		return nil, wrap("listing unresolved executions", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, wrap("listing unresolved executions", err)
}
