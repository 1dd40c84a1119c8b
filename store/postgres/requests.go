package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

const requestColumns = `id::text AS id, key, basis_hash, run_id, step, tool, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, status, round, expires_at,
	coalesce(card_channel, '') AS card_channel, coalesce(card_ts, '') AS card_ts, created_at, updated_at`

// scanRequest scans a row that starts with requestColumns, in their order,
// followed by extra: every replay reads one, so it is scanned by position
// rather than matched to the struct by column name.
func scanRequest(row pgx.Row, r *store.Request, extra ...any) error {
	return row.Scan(append([]any{&r.ID, &r.Key, &r.BasisHash, &r.RunID, &r.Step, &r.Tool, &r.Snapshot, &r.PayloadHash,
		&r.Summary, &r.Reason, &r.RequestedBy, &r.RequestedFor, &r.Status, &r.Round, &r.ExpiresAt,
		&r.CardChannel, &r.CardTS, &r.CreatedAt, &r.UpdatedAt}, extra...)...)
}

func collect[T any](what string, rows pgx.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, wrap(what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	return out, wrap(what, err)
}

func one[T any](what string, rows pgx.Rows, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, wrap(what, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	return v, wrap(what, err)
}

// first returns the first of rows, and false when there is none.
func first[T any](rows []T, err error) (T, bool, error) {
	var zero T
	if err != nil || len(rows) == 0 {
		return zero, false, err
	}
	return rows[0], true, nil
}

func (e executor) InsertRequest(ctx context.Context, p store.NewRequest, now *time.Time) (store.Request, bool, error) {
	rows, err := e.db.Query(ctx, `
INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, expires_at, created_at, updated_at)
VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10, $11, $12,
	coalesce($14::timestamptz, now()) + $13::bigint * interval '1 microsecond', coalesce($14::timestamptz, now()), coalesce($14::timestamptz, now()))
ON CONFLICT (key) DO NOTHING
RETURNING `+requestColumns,
		p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool, p.EffectStrings, p.Snapshot, p.PayloadHash,
		p.Summary, p.Reason, p.RequestedBy, p.RequestedFor, p.TTL.Microseconds(), now)
	return first(collect[store.Request]("inserting request", rows, err))
}

func (e executor) RequestByKey(ctx context.Context, key string) (store.Request, error) {
	rows, err := e.db.Query(ctx, `SELECT `+requestColumns+` FROM requests WHERE key = $1`, key)
	return one[store.Request]("reading request", rows, err)
}

func (e executor) RequestByID(ctx context.Context, id string) (store.Request, error) {
	rows, err := e.db.Query(ctx, `SELECT `+requestColumns+` FROM requests WHERE id = $1`, id)
	return one[store.Request]("reading request", rows, err)
}

// ReplayRequests reads one key on a cached plan; several keys are planned
// for each call (no cached generic plan), so an empty table's sequential
// scan never outlives it: the key list is looked up through the unique
// index once the table has grown.
func (e executor) ReplayRequests(ctx context.Context, keys []string) (map[string]store.Replayed, error) {
	const replay = `SELECT ` + requestColumns + `, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = 'post_card' AND o.state = 'pending') AS post_queued
FROM requests WHERE `
	var (
		rows pgx.Rows
		err  error
	)
	if len(keys) == 1 {
		rows, err = e.db.Query(ctx, replay+`key = $1`, keys[0])
	} else {
		rows, err = e.db.Query(ctx, replay+`key = ANY($1)`, pgx.QueryExecModeCacheDescribe, keys)
	}
	if err != nil {
		return nil, wrap("reading requests", err)
	}
	defer rows.Close()
	out := make(map[string]store.Replayed, len(keys))
	for rows.Next() {
		var r store.Replayed
		if err := scanRequest(rows, &r.Request, &r.PostQueued); err != nil {
			return nil, wrap("reading requests", err)
		}
		out[r.Request.Key] = r
	}
	return out, wrap("reading requests", rows.Err())
}

func (e executor) DecideRequest(ctx context.Context, p store.DecideParams) (store.Request, bool, error) {
	status := store.RequestRejected
	if p.Verdict == store.VerdictApprove {
		status = store.RequestApproved
	}
	rows, err := e.db.Query(ctx, `
UPDATE requests SET status = $4, updated_at = coalesce($5::timestamptz, now())
WHERE id = $1 AND round = $2 AND payload_hash = $3 AND status = 'pending'
	AND expires_at > coalesce($5::timestamptz, now())
RETURNING `+requestColumns, p.RequestID, p.Round, p.PayloadHash, status, p.Now)
	return first(collect[store.Request]("deciding request", rows, err))
}

func (e executor) CancelRequest(ctx context.Context, id string, now *time.Time) (store.Request, bool, error) {
	rows, err := e.db.Query(ctx, `
UPDATE requests SET status = 'cancelled', updated_at = coalesce($2::timestamptz, now())
WHERE id = $1 AND status = 'pending'
RETURNING `+requestColumns, id, now)
	return first(collect[store.Request]("cancelling request", rows, err))
}

func (e executor) ExpireRequests(ctx context.Context, now *time.Time, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, `
WITH due AS (
	SELECT id FROM requests
	WHERE status = 'pending' AND expires_at <= coalesce($1::timestamptz, now())
	ORDER BY expires_at
	LIMIT $2
	FOR UPDATE SKIP LOCKED
), r AS (
	UPDATE requests SET status = 'expired', updated_at = coalesce($1::timestamptz, now())
	FROM due WHERE requests.id = due.id AND requests.status = 'pending'
	RETURNING requests.*
)
SELECT `+requestColumns+` FROM r`, now, limit)
	return collect[store.Request]("expiring requests", rows, err)
}

func (e executor) ReopenRequest(ctx context.Context, id string, round int, at time.Time, ttl time.Duration) (int, bool, error) {
	var newRound int
	err := e.db.QueryRow(ctx, `
UPDATE requests SET status = 'pending', round = round + 1, updated_at = $3::timestamptz,
	expires_at = greatest(expires_at, $3::timestamptz + $4::bigint * interval '1 microsecond')
WHERE id = $1 AND status = 'approved' AND round = $2
RETURNING round`, id, round, at, ttl.Microseconds()).Scan(&newRound)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return newRound, err == nil, wrap("reopening request", err)
}

func (e executor) SetCard(ctx context.Context, id, channel, ts string) error {
	_, err := e.db.Exec(ctx, `UPDATE requests SET card_channel = $2, card_ts = $3 WHERE id = $1`, id, channel, ts)
	return wrap("recording card", err)
}

func (e executor) RedriveCard(ctx context.Context, id string) error {
	_, err := e.db.Exec(ctx, `
INSERT INTO outbox (kind, request_id, round)
SELECT 'post_card', r.id, r.round FROM requests r
WHERE r.id = $1 AND r.status = 'pending' AND r.card_ts IS NULL
	AND NOT EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND o.kind = 'post_card' AND o.state = 'pending')`, id)
	return wrap("re-driving card", err)
}

// InsertRequestsBatch stores new requests, each with its "requested" audit
// event and card post, in one statement and one commit; keys must be
// distinct. A key that exists already is returned and writes nothing (ON
// CONFLICT DO NOTHING takes no transaction id).
func (e executor) InsertRequestsBatch(ctx context.Context, ps []store.NewRequest, now *time.Time) ([]store.InsertResult, error) {
	byKey := make(map[string]store.InsertResult, len(ps))
	missing := ps
	// The insert returns only the rows it inserted; a key that conflicted is
	// read after it. (Reading them in the same statement, key = ANY($1), got
	// a sequential-scan plan while the table was small, and the connection
	// kept that cached plan: one full scan per batch as the table grew.) A
	// key whose insert then rolled back is neither inserted nor found, and is
	// inserted again.
	for range 2 {
		if err := e.insertRequests(ctx, missing, now, byKey); err != nil {
			return nil, err
		}
		missing = slices.DeleteFunc(slices.Clone(missing), func(p store.NewRequest) bool { _, ok := byKey[p.Key]; return ok })
		// Existing keys are rare here (the service reads before it inserts),
		// so each is one lookup on the unique index.
		for _, p := range missing {
			req, err := e.RequestByKey(ctx, p.Key)
			switch {
			case err == nil:
				byKey[p.Key] = store.InsertResult{Request: req}
			case !errors.Is(err, store.ErrNotFound):
				return nil, wrap("inserting requests", err)
			}
		}
		missing = slices.DeleteFunc(missing, func(p store.NewRequest) bool { _, ok := byKey[p.Key]; return ok })
		if len(missing) == 0 {
			break
		}
	}
	if len(missing) > 0 {
		return nil, errors.New("inserting requests: key " + missing[0].Key + " neither inserted nor found")
	}
	results := make([]store.InsertResult, len(ps))
	for i, p := range ps {
		results[i] = byKey[p.Key]
	}
	return results, nil
}

func (e executor) insertRequests(ctx context.Context, ps []store.NewRequest, now *time.Time, into map[string]store.InsertResult) error {
	n := len(ps)
	keys, basis, runs, steps, tools := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	snapshots, hashes, summaries, reasons := make([][]byte, n), make([]string, n), make([]string, n), make([]string, n)
	by, forWhom, ttls, strs := make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	for i, p := range ps {
		keys[i], basis[i], runs[i], steps[i], tools[i] = p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool
		snapshots[i], hashes[i], summaries[i], reasons[i] = p.Snapshot, p.PayloadHash, p.Summary, p.Reason
		by[i], forWhom[i], ttls[i] = p.RequestedBy, p.RequestedFor, p.TTL.Microseconds()
		strs[i] = arrayLiteral(p.EffectStrings)
	}
	rows, err := e.db.Query(ctx, `
WITH input AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bytea[],
		$7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[], $13::text[])
		AS t(key, basis_hash, run_id, step, tool, snapshot, payload_hash, summary, reason, requested_by, requested_for, ttl_us, effect_strings)
), r AS (
	INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash,
		summary, reason, requested_by, requested_for, expires_at, created_at, updated_at)
	SELECT key, basis_hash, run_id, step::jsonb, tool, effect_strings::text[], snapshot, payload_hash,
		summary, reason, requested_by, requested_for,
		coalesce($14::timestamptz, now()) + ttl_us * interval '1 microsecond',
		coalesce($14::timestamptz, now()), coalesce($14::timestamptz, now())
	FROM input
	ORDER BY key -- batches take their key locks in one order, so two never deadlock
	ON CONFLICT (key) DO NOTHING
	RETURNING *
), e AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT id, created_at, 'agent:' || requested_by, 'requested', jsonb_build_object('key', key, 'round', round) FROM r
), o AS (
	INSERT INTO outbox (kind, request_id, round, next_attempt_at)
	SELECT 'post_card', id, round, created_at FROM r
)
SELECT `+requestColumns+`, true AS inserted FROM r`,
		keys, basis, runs, steps, tools, snapshots, hashes, summaries, reasons, by, forWhom, ttls, strs, now)
	found, err := collect[store.InsertResult]("inserting requests", rows, err)
	if err != nil {
		return err
	}
	for _, f := range found {
		into[f.Key] = f
	}
	return nil
}

// arrayLiteral writes values as a PostgreSQL array literal ({"a","b"}), so a
// batch can pass each request's list as one element of a text[] parameter.
func arrayLiteral(values []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for j := 0; j < len(v); j++ {
			if v[j] == '"' || v[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(v[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
