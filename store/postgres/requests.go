package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

// scanRequest scans a row that starts with {{request_columns}}, in their order,
// followed by extra: every replay reads one, so it is scanned by position
// rather than matched to the struct by column name.
func scanRequest(row pgx.Row, r *store.Request, extra ...any) error {
	return row.Scan(append([]any{&r.ID, &r.Key, &r.BasisHash, &r.RunID, &r.Step, &r.Tool, &r.Snapshot, &r.PayloadHash,
		&r.Summary, &r.Reason, &r.RequestedBy, &r.RequestedFor, &r.Status, &r.Round, &r.ExpiresAt,
		&r.CardSurface, &r.CardRef, &r.CreatedAt, &r.UpdatedAt, &r.Version, &r.Policy, &r.RoundStartedAt,
		&r.Supersedes, &r.SupersededBy}, extra...)...)
}

// collect scans every row into a T by column name; an argument that names
// no row (see translate) is an empty result.
func collect[T any](what string, rows pgx.Rows, err error) ([]T, error) {
	if err == nil {
		var out []T
		out, err = pgx.CollectRows(rows, pgx.RowToStructByName[T])
		if err == nil {
			return out, nil
		}
	}
	if err = wrap(what, err); errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return nil, err
}

func one[T any](what string, rows pgx.Rows, err error) (T, error) {
	var zero T
	if err != nil {
		return zero, wrap(what, err)
	}
	v, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[T])
	return v, wrap(what, err)
}

// exists runs a query of one boolean; an argument that names no row (see
// translate) is false.
func (e executor) exists(ctx context.Context, what, query string, args ...any) (bool, error) {
	var ok bool
	err := translate(e.db.QueryRow(ctx, query, args...).Scan(&ok))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return ok, wrap(what, err)
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
	policy, err := json.Marshal(p.Policy)
	if err != nil {
		return store.Request{}, false, err
	}
	rows, err := e.db.Query(ctx, q.Get("insert_request"),
		p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool, p.EffectStrings, p.Snapshot, p.PayloadHash,
		p.Summary, p.Reason, p.RequestedBy, p.RequestedFor, p.TTL.Microseconds(), now, string(policy), p.Supersedes)
	return first(collect[store.Request]("inserting request", rows, err))
}

func (e executor) RequestByKey(ctx context.Context, key string) (store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("request_by_key"), key)
	return one[store.Request]("reading request", rows, err)
}

func (e executor) RequestByID(ctx context.Context, id string) (store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("request_by_id"), id)
	return one[store.Request]("reading request", rows, err)
}

// ReplayRequests reads one key on a cached plan; several keys are planned
// for each call (no cached generic plan), so an empty table's sequential
// scan never outlives it: the key list is looked up through the unique
// index once the table has grown.
func (e executor) ReplayRequests(ctx context.Context, keys []string) (map[string]store.Replayed, error) {
	var (
		rows pgx.Rows
		err  error
	)
	if len(keys) == 1 {
		rows, err = e.db.Query(ctx, q.Get("replay_request"), keys[0], string(store.OutboxPostCard))
	} else {
		rows, err = e.db.Query(ctx, q.Get("replay_requests_many"), pgx.QueryExecModeCacheDescribe, keys,
			string(store.OutboxPostCard))
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
	rows, err := e.db.Query(ctx, q.Get("decide_request"), p.RequestID, p.Round, p.PayloadHash, status, p.Now)
	return first(collect[store.Request]("deciding request", rows, err))
}

func (e executor) MarkEdited(ctx context.Context, p store.MarkEditedParams) (store.Request, bool, error) {
	rows, err := e.db.Query(ctx, q.Get("mark_edited"), p.RequestID, p.Round, p.PayloadHash, p.SupersededBy, p.Now)
	return first(collect[store.Request]("settling request as edited", rows, err))
}

func (e executor) CancelRequest(ctx context.Context, id string, now *time.Time) (store.Request, bool, error) {
	rows, err := e.db.Query(ctx, q.Get("cancel_request"), id, now)
	return first(collect[store.Request]("cancelling request", rows, err))
}

func (e executor) ExpireRequests(ctx context.Context, now *time.Time, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("expire_requests"), now, limit)
	return collect[store.Request]("expiring requests", rows, err)
}

func (e executor) ReopenRequest(ctx context.Context, p store.ReopenRequestParams) (int, bool, error) {
	policy, err := optionalPolicy(p.Policy)
	if err != nil {
		return 0, false, wrap("reopening request", err)
	}
	var newRound int
	err = e.db.QueryRow(ctx, q.Get("reopen_request"), p.RequestID, p.Round, p.At, p.TTL.Microseconds(), policy).Scan(&newRound)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return newRound, err == nil, wrap("reopening request", err)
}

// optionalPolicy is p as the JSON a statement stores, or nil to keep the
// row's.
func optionalPolicy(p *store.Policy) (*string, error) {
	if p == nil {
		return nil, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

func (e executor) SetCard(ctx context.Context, id, surface, ref string) error {
	_, err := e.db.Exec(ctx, q.Get("set_card"), id, surface, ref)
	return wrap("recording card", err)
}

func (e executor) RedriveCard(ctx context.Context, id string, kind store.OutboxKind) error {
	_, err := e.db.Exec(ctx, q.Get("redrive_card"), id, string(kind))
	return wrap("re-driving card", err)
}

// InsertRequestsBatch stores new requests, each with what it owes, in one
// statement and one commit; keys must be distinct. A key that exists already is returned and writes nothing (ON
// CONFLICT DO NOTHING takes no transaction id).
func (e executor) InsertRequestsBatch(ctx context.Context, ps []store.NewRequest, owed []store.Owed, now *time.Time) ([]store.InsertResult, error) {
	byKey := make(map[string]store.InsertResult, len(ps))
	missing := ps
	// The insert returns only the rows it inserted; a key that conflicted is
	// read after it. (Reading them in the same statement, key = ANY($1), got
	// a sequential-scan plan while the table was small, and the connection
	// kept that cached plan: one full scan per batch as the table grew.) A
	// key whose insert then rolled back is neither inserted nor found, and is
	// inserted again.
	for range 2 {
		if err := e.insertRequests(ctx, missing, owedOf(ps, owed, missing), now, byKey); err != nil {
			return nil, err
		}
		missing = slices.DeleteFunc(slices.Clone(missing), func(p store.NewRequest) bool { _, ok := byKey[p.Key]; return ok })
		// Replays reach the insert (the service inserts first on a remote
		// store), so the keys that conflicted are read back in one statement.
		if len(missing) > 0 {
			keys := make([]string, len(missing))
			for i, p := range missing {
				keys[i] = p.Key
			}
			found, err := e.ReplayRequests(ctx, keys)
			if err != nil {
				return nil, wrap("inserting requests", err)
			}
			for key, r := range found {
				byKey[key] = store.InsertResult{Request: r.Request, PostQueued: r.PostQueued}
			}
			if err := e.pruned(ctx, missing, byKey); err != nil {
				return nil, err
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
		if results[i].Inserted {
			// The same key later in this batch replays the row just
			// inserted, whose card post is queued.
			byKey[p.Key] = store.InsertResult{Request: results[i].Request, PostQueued: true}
		}
	}
	return results, nil
}

// pruned records the tombstones of the keys in ps that byKey does not hold
// yet: keys that were neither inserted nor found were pruned, or their
// insert rolled back.
func (e executor) pruned(ctx context.Context, ps []store.NewRequest, byKey map[string]store.InsertResult) error {
	var keys []string
	for _, p := range ps {
		if _, ok := byKey[p.Key]; !ok {
			keys = append(keys, p.Key)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	tombs, err := e.Tombstones(ctx, keys)
	if err != nil {
		return wrap("inserting requests", err)
	}
	for key, t := range tombs {
		byKey[key] = store.InsertResult{Pruned: &t}
	}
	return nil
}

// owedOf returns what each of some, a subset of ps in order, owes.
func owedOf(ps []store.NewRequest, owed []store.Owed, some []store.NewRequest) []store.Owed {
	if len(some) == len(ps) {
		return owed
	}
	byKey := make(map[string]store.Owed, len(ps))
	for i, p := range ps {
		byKey[p.Key] = owed[i]
	}
	out := make([]store.Owed, len(some))
	for i, p := range some {
		out[i] = byKey[p.Key]
	}
	return out
}

func (e executor) insertRequests(ctx context.Context, ps []store.NewRequest, owed []store.Owed, now *time.Time, into map[string]store.InsertResult) error {
	n := len(ps)
	keys, basis, runs, steps, tools := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	snapshots, hashes, summaries, reasons := make([][]byte, n), make([]string, n), make([]string, n), make([]string, n)
	by, forWhom, ttls, strs := make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	policies := make([]string, n)
	for i, p := range ps {
		keys[i], basis[i], runs[i], steps[i], tools[i] = p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool
		snapshots[i], hashes[i], summaries[i], reasons[i] = p.Snapshot, p.PayloadHash, p.Summary, p.Reason
		by[i], forWhom[i], ttls[i] = p.RequestedBy, p.RequestedFor, p.TTL.Microseconds()
		strs[i] = arrayLiteral(p.EffectStrings)
		policy, err := json.Marshal(p.Policy)
		if err != nil {
			return err
		}
		policies[i] = string(policy)
	}
	o, err := flattenByKey(ps, owed)
	if err != nil {
		return wrap("inserting requests", err)
	}
	var found []store.InsertResult
	err = e.queryGeneric(ctx, q.Get("insert_requests"), []any{
		keys, basis, runs, steps, tools, snapshots, hashes, summaries, reasons, by, forWhom, ttls, strs, now, policies,
		o.evKey, o.evActor, o.evKind, o.evData, o.obKey, o.obKind, o.obData,
	}, func(rows pgx.Rows) (err error) {
		found, err = pgx.CollectRows(rows, pgx.RowToStructByName[store.InsertResult])
		return err
	})
	if err != nil {
		return wrap("inserting requests", err)
	}
	for _, f := range found {
		into[f.Key] = f
	}
	return nil
}

// arrayLiteral writes values as a PostgreSQL array literal ({"a","b"}), so a
// batch can pass each request's list as one element of a text[] parameter.
func arrayLiteral(values []string) string {
	size := 2
	for _, v := range values {
		size += len(v) + 3 + strings.Count(v, `"`) + strings.Count(v, `\`)
	}
	var b strings.Builder
	b.Grow(size)
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
