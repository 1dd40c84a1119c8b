package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequestStatus is where a request stands in review; values equal the SQL values.
type RequestStatus string

// Request statuses.
const (
	RequestPending   RequestStatus = "pending"
	RequestApproved  RequestStatus = "approved"
	RequestRejected  RequestStatus = "rejected"
	RequestExpired   RequestStatus = "expired"
	RequestCancelled RequestStatus = "cancelled"
)

// Terminal reports whether no further review can happen in this round.
func (s RequestStatus) Terminal() bool { return s != RequestPending }

// Request is an agent's intended write as stored. Snapshot holds the exact
// canonical bytes of the effect that reviewers see and the executor sends.
type Request struct {
	ID           string          `db:"id"`
	Key          string          `db:"key"`
	BasisHash    string          `db:"basis_hash"`
	RunID        string          `db:"run_id"`
	Step         json.RawMessage `db:"step"`
	Tool         string          `db:"tool"`
	Snapshot     []byte          `db:"snapshot"`
	PayloadHash  string          `db:"payload_hash"`
	Summary      string          `db:"summary"`
	Reason       string          `db:"reason"`
	RequestedBy  string          `db:"requested_by"`
	RequestedFor string          `db:"requested_for"`
	Status       RequestStatus   `db:"status"`
	Round        int             `db:"round"`
	ExpiresAt    time.Time       `db:"expires_at"`
	CardChannel  string          `db:"card_channel"`
	CardTS       string          `db:"card_ts"`
	CreatedAt    time.Time       `db:"created_at"`
	UpdatedAt    time.Time       `db:"updated_at"`
}

const requestColumns = `id::text AS id, key, basis_hash, run_id, step, tool, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, status, round, expires_at,
	coalesce(card_channel, '') AS card_channel, coalesce(card_ts, '') AS card_ts, created_at, updated_at`

// NewRequest is what intake stores for a new key.
type NewRequest struct {
	Key          string
	BasisHash    string
	RunID        string
	Step         json.RawMessage
	Tool         string
	Snapshot     []byte
	PayloadHash  string
	Summary      string
	Reason       string
	RequestedBy  string
	RequestedFor string
	TTL          time.Duration
	Now          *time.Time
	// EffectStrings is EffectStrings(Snapshot); nil has it computed at insert.
	EffectStrings []string
}

// InsertRequest stores a new request with its "requested" audit event and the
// outbox row that posts its card, or returns the request the key already
// names (inserted false). See InsertRequests.
func InsertRequest(ctx context.Context, db DBTX, p NewRequest) (req Request, inserted bool, err error) {
	results, err := InsertRequests(ctx, db, []NewRequest{p}, p.Now)
	if err != nil {
		return Request{}, false, err
	}
	return results[0].Request, results[0].Inserted, nil
}

// InsertResult is the stored request for one NewRequest, and whether this
// call inserted it.
type InsertResult struct {
	Request
	Inserted bool `db:"inserted"`
}

// InsertRequests stores new requests, each with its audit event and card
// post, and returns one result per request in order; keys must be distinct.
// It is one statement and one commit for all of them; a key that exists
// already is returned and writes nothing (ON CONFLICT DO NOTHING takes no
// transaction id). now, when set, is the creation time of every request.
func InsertRequests(ctx context.Context, db DBTX, ps []NewRequest, now *time.Time) ([]InsertResult, error) {
	byKey := make(map[string]InsertResult, len(ps))
	missing := ps
	// The insert returns only the rows it inserted; a key that conflicted is
	// read after it. (Reading them in the same statement, key = ANY($1), got
	// a sequential-scan plan while the table was small, and the connection
	// kept that cached plan: one full scan per batch as the table grew.) A
	// key whose insert then rolled back is neither inserted nor found, and is
	// inserted again.
	for range 2 {
		if err := insertRequests(ctx, db, missing, now, byKey); err != nil {
			return nil, err
		}
		missing = slices.DeleteFunc(slices.Clone(missing), func(p NewRequest) bool { _, ok := byKey[p.Key]; return ok })
		// Existing keys are rare here (the service reads before it inserts),
		// so each is one lookup on the unique index.
		for _, p := range missing {
			req, err := RequestByKey(ctx, db, p.Key)
			switch {
			case err == nil:
				byKey[p.Key] = InsertResult{Request: req}
			case !errors.Is(err, ErrNotFound):
				return nil, fmt.Errorf("inserting requests: %w", err)
			}
		}
		missing = slices.DeleteFunc(missing, func(p NewRequest) bool { _, ok := byKey[p.Key]; return ok })
		if len(missing) == 0 {
			break
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("inserting requests: key %s neither inserted nor found", missing[0].Key)
	}
	results := make([]InsertResult, len(ps))
	for i, p := range ps {
		results[i] = byKey[p.Key]
	}
	return results, nil
}

func insertRequests(ctx context.Context, db DBTX, ps []NewRequest, now *time.Time, into map[string]InsertResult) error {
	n := len(ps)
	keys, basis, runs, steps, tools := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	snapshots, hashes, summaries, reasons := make([][]byte, n), make([]string, n), make([]string, n), make([]string, n)
	by, forWhom, ttls, strs := make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	for i, p := range ps {
		keys[i], basis[i], runs[i], steps[i], tools[i] = p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool
		snapshots[i], hashes[i], summaries[i], reasons[i] = p.Snapshot, p.PayloadHash, p.Summary, p.Reason
		by[i], forWhom[i], ttls[i] = p.RequestedBy, p.RequestedFor, p.TTL.Microseconds()
		values := p.EffectStrings
		if values == nil {
			var err error
			if values, err = EffectStrings(p.Snapshot); err != nil {
				return fmt.Errorf("inserting requests: key %s: %w", p.Key, err)
			}
		}
		strs[i] = arrayLiteral(values)
	}
	rows, err := db.Query(ctx, `
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
	if err != nil {
		return fmt.Errorf("inserting requests: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByName[InsertResult])
	if err != nil {
		return fmt.Errorf("inserting requests: %w", translate(err))
	}
	for _, f := range found {
		into[f.Key] = f
	}
	return nil
}

// ReplayRequest returns the request stored under key, and whether a card post
// for its current round is queued. It only reads: replays never write, except
// through RedriveCard.
func ReplayRequest(ctx context.Context, db DBTX, key string) (req Request, postQueued bool, err error) {
	// Every replay runs this, so its row is scanned by position rather than
	// matched to the struct by column name.
	row := db.QueryRow(ctx, `SELECT `+requestColumns+`, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = 'post_card' AND o.state = 'pending') AS post_queued
FROM requests WHERE key = $1`, key)
	if err := scanRequest(row, &req, &postQueued); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return Request{}, false, ErrNotFound
		}
		return Request{}, false, fmt.Errorf("reading request: %w", err)
	}
	return req, postQueued, nil
}

// scanRequest scans a row that starts with requestColumns, in their order,
// followed by extra.
func scanRequest(row pgx.Row, r *Request, extra ...any) error {
	return row.Scan(append([]any{&r.ID, &r.Key, &r.BasisHash, &r.RunID, &r.Step, &r.Tool, &r.Snapshot, &r.PayloadHash,
		&r.Summary, &r.Reason, &r.RequestedBy, &r.RequestedFor, &r.Status, &r.Round, &r.ExpiresAt,
		&r.CardChannel, &r.CardTS, &r.CreatedAt, &r.UpdatedAt}, extra...)...)
}

// RedriveCard queues a card post for the request's round when it is pending,
// its card was never posted and no post is queued (invariant 2: a replay
// re-notifies Slack only to re-drive a card that was never posted).
func RedriveCard(ctx context.Context, db DBTX, requestID string) error {
	_, err := db.Exec(ctx, `
INSERT INTO outbox (kind, request_id, round)
SELECT 'post_card', r.id, r.round FROM requests r
WHERE r.id = $1 AND r.status = 'pending' AND r.card_ts IS NULL
	AND NOT EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND o.kind = 'post_card' AND o.state = 'pending')`, requestID)
	if err != nil {
		return fmt.Errorf("re-driving card: %w", err)
	}
	return nil
}

// RequestByKey returns the request stored under key.
func RequestByKey(ctx context.Context, db DBTX, key string) (Request, error) {
	if holdsNUL(key) {
		return Request{}, ErrNotFound
	}
	return queryRequest(ctx, db, `SELECT `+requestColumns+` FROM requests WHERE key = $1`, key)
}

// RequestByID returns the request with the given id.
func RequestByID(ctx context.Context, db DBTX, id string) (Request, error) {
	if !IsUUID(id) {
		return Request{}, ErrNotFound
	}
	return queryRequest(ctx, db, `SELECT `+requestColumns+` FROM requests WHERE id = $1`, id)
}

// RequestByRef returns the request named by its id or its full key.
func RequestByRef(ctx context.Context, db DBTX, ref string) (Request, error) {
	if IsUUID(ref) {
		return RequestByID(ctx, db, ref)
	}
	return RequestByKey(ctx, db, ref)
}

// RequestForUpdateTx locks and returns a request inside the caller's transaction.
func RequestForUpdateTx(ctx context.Context, tx pgx.Tx, id string) (Request, error) {
	if !IsUUID(id) {
		return Request{}, ErrNotFound
	}
	return queryRequest(ctx, tx, `SELECT `+requestColumns+` FROM requests WHERE id = $1 FOR UPDATE`, id)
}

func queryRequest(ctx context.Context, db DBTX, sql string, args ...any) (Request, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return Request{}, fmt.Errorf("reading request: %w", err)
	}
	req, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return Request{}, translate(err)
	}
	return req, nil
}

// CancelRequest moves a pending request to cancelled with its audit event and
// card update. cancelled is false when the request was no longer pending.
func CancelRequest(ctx context.Context, db DBTX, id, actor string, now *time.Time) (req Request, cancelled bool, err error) {
	if !IsUUID(id) {
		return Request{}, false, ErrNotFound
	}
	rows, err := db.Query(ctx, `
WITH r AS (
	UPDATE requests SET status = 'cancelled', updated_at = coalesce($3::timestamptz, now())
	WHERE id = $1 AND status = 'pending'
	RETURNING *
), e AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT id, updated_at, $2, 'cancelled', jsonb_build_object('round', round) FROM r
), o AS (
	INSERT INTO outbox (kind, request_id, round, next_attempt_at)
	SELECT 'update_card', id, round, updated_at FROM r
)
SELECT `+requestColumns+` FROM r`, id, actor, now)
	if err != nil {
		return Request{}, false, fmt.Errorf("cancelling request: %w", err)
	}
	reqs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return Request{}, false, fmt.Errorf("cancelling request: %w", translate(err))
	}
	if len(reqs) == 1 {
		return reqs[0], true, nil
	}
	req, err = RequestByID(ctx, db, id)
	return req, false, err
}

// ExpireDue moves up to limit pending requests past their expiry to expired,
// each with its audit event and card update, and returns them.
func ExpireDue(ctx context.Context, db DBTX, now *time.Time, limit int) ([]Request, error) {
	rows, err := db.Query(ctx, `
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
), e AS (
	INSERT INTO events (request_id, at, actor, kind, data)
	SELECT id, updated_at, 'system', 'expired', jsonb_build_object('round', round) FROM r
), o AS (
	INSERT INTO outbox (kind, request_id, round, next_attempt_at)
	SELECT 'update_card', id, round, updated_at FROM r
)
SELECT `+requestColumns+` FROM r`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("expiring requests: %w", err)
	}
	reqs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Request])
	if err != nil {
		return nil, fmt.Errorf("expiring requests: %w", translate(err))
	}
	return reqs, nil
}

// SetCard records where a request's card was posted.
func SetCard(ctx context.Context, db DBTX, id, channel, ts string) error {
	_, err := db.Exec(ctx, `UPDATE requests SET card_channel = $2, card_ts = $3 WHERE id = $1`, id, channel, ts)
	if err != nil {
		return fmt.Errorf("recording card: %w", err)
	}
	return nil
}

// IsUUID reports whether s has the textual shape of a UUID, so a key is never
// sent to the database as an id.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
