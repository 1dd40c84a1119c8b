package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertRequest(ctx context.Context, p store.NewRequest, now *time.Time) (req store.Request, inserted bool, err error) {
	policy, err := json.Marshal(p.Policy)
	if err != nil {
		return store.Request{}, false, err
	}
	err = e.write(ctx, func(tx *writeTx) error {
		at := micros(tx.clock(now))
		req, err = scanRequest(tx.QueryRowContext(ctx, q.Get("insert_request"),
			newID(), p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool, p.Snapshot, p.PayloadHash,
			p.Summary, p.Reason, p.RequestedBy, p.RequestedFor, at+p.TTL.Microseconds(), at, at, string(policy)))
		if errors.Is(err, store.ErrNotFound) {
			return nil // the key exists: nothing was written
		}
		if err != nil {
			return wrap("inserting request", err)
		}
		inserted = true
		for _, v := range p.EffectStrings {
			if _, err := tx.ExecContext(ctx, q.Get("index_effect_string"), v, req.ID); err != nil {
				return wrap("indexing effect", err)
			}
		}
		return nil
	})
	return req, inserted, err
}

func (e executor) RequestByKey(ctx context.Context, key string) (store.Request, error) {
	return scanRequest(e.read().QueryRowContext(ctx, q.Get("request_by_key"), key))
}

func (e executor) RequestByID(ctx context.Context, id string) (store.Request, error) {
	return scanRequest(e.read().QueryRowContext(ctx, q.Get("request_by_id"), canonicalID(id)))
}

func (e executor) ReplayRequests(ctx context.Context, keys []string) (map[string]store.Replayed, error) {
	out := make(map[string]store.Replayed, len(keys))
	for _, key := range keys {
		var r store.Replayed
		var err error
		r.Request, err = scanRequestWith(e.read().QueryRowContext(ctx, q.Get("replay_requests"), key), &r.PostQueued)
		switch {
		case err == nil:
			out[key] = r
		case !errors.Is(err, store.ErrNotFound):
			return nil, wrap("reading requests", err)
		}
	}
	return out, nil
}

// updateRequest runs an UPDATE … RETURNING {{request_columns}}.
func (e executor) updateRequest(ctx context.Context, what, query string, args func(tx *writeTx) []any) (reqs []store.Request, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		rows, err := tx.QueryContext(ctx, query, args(tx)...)
		if reqs, err = collect(what, scanRequest, rows, err); err != nil {
			return err
		}
		return nil
	})
	return reqs, err
}

func (e executor) DecideRequest(ctx context.Context, p store.DecideParams) (store.Request, bool, error) {
	status := store.RequestRejected
	if p.Verdict == store.VerdictApprove {
		status = store.RequestApproved
	}
	reqs, err := e.updateRequest(ctx, "deciding request", q.Get("decide_request"), func(tx *writeTx) []any {
		return []any{status, micros(tx.clock(p.Now)), canonicalID(p.RequestID), p.Round, p.PayloadHash}
	})
	return firstOf(reqs, err)
}

func (e executor) CancelRequest(ctx context.Context, id string, now *time.Time) (store.Request, bool, error) {
	reqs, err := e.updateRequest(ctx, "cancelling request", q.Get("cancel_request"), func(tx *writeTx) []any { return []any{micros(tx.clock(now)), canonicalID(id)} })
	return firstOf(reqs, err)
}

func (e executor) ExpireRequests(ctx context.Context, now *time.Time, limit int) ([]store.Request, error) {
	return e.updateRequest(ctx, "expiring requests", q.Get("expire_requests"),
		func(tx *writeTx) []any { return []any{micros(tx.clock(now)), limit} })
}

func (e executor) ReopenRequest(ctx context.Context, p store.ReopenRequestParams) (newRound int, ok bool, err error) {
	reqs, err := e.updateRequest(ctx, "reopening request", q.Get("reopen_request"), func(*writeTx) []any {
		return []any{micros(p.At), p.TTL.Microseconds(), canonicalID(p.RequestID), p.Round}
	})
	r, ok, err := firstOf(reqs, err)
	return r.Round, ok, err
}

func firstOf[T any](rows []T, err error) (T, bool, error) {
	var zero T
	if err != nil || len(rows) == 0 {
		return zero, false, err
	}
	return rows[0], true, nil
}

func (e executor) SetCard(ctx context.Context, id, channel, ts string) error {
	return e.exec(ctx, "recording card", q.Get("set_card"), channel, ts, canonicalID(id))
}

func (e executor) RedriveCard(ctx context.Context, id string) error {
	return e.write(ctx, func(tx *writeTx) error {
		at := micros(tx.clock(nil))
		_, err := tx.ExecContext(ctx, q.Get("redrive_card"), at, canonicalID(id))
		return wrap("re-driving card", err)
	})
}

// exec runs one write statement.
func (e executor) exec(ctx context.Context, what, query string, args ...any) error {
	return e.write(ctx, func(tx *writeTx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return wrap(what, err)
	})
}
