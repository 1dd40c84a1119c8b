package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertRequest(ctx context.Context, p store.NewRequest, now *time.Time) (store.Request, bool, error) {
	policy, err := json.Marshal(p.Policy)
	if err != nil {
		return store.Request{}, false, err
	}
	at := micros(e.tx.clock(now))
	req, err := scanRequest(e.tx.QueryRowContext(ctx, q.Get("insert_request"),
		newID(), p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool, p.Snapshot, p.PayloadHash,
		p.Summary, p.Reason, p.RequestedBy, p.RequestedFor, at+p.TTL.Microseconds(), at, at, string(policy), p.Supersedes))
	// No row: the key exists, and nothing was written.
	if inserted, err := found("inserting request", err); !inserted {
		return store.Request{}, false, err
	}
	for _, v := range p.EffectStrings {
		if err := e.tx.exec(ctx, "indexing effect", q.Get("index_effect_string"), v, req.ID); err != nil {
			return store.Request{}, false, err
		}
	}
	return req, true, nil
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
		r.Request, err = scanRequestWith(e.read().QueryRowContext(ctx, q.Get("replay_requests"), key, string(store.OutboxPostCard)), &r.PostQueued)
		switch {
		case err == nil:
			out[key] = r
		case !errors.Is(err, store.ErrNotFound):
			return nil, wrap("reading requests", err)
		}
	}
	return out, nil
}

// updateRequest runs an UPDATE … RETURNING {{request_columns}} of at most
// one row; ok false when it matched none.
func (e executor) updateRequest(ctx context.Context, what, query string, args ...any) (store.Request, bool, error) {
	req, err := scanRequest(e.tx.QueryRowContext(ctx, query, args...))
	ok, err := found(what, err)
	return req, ok, err
}

func (e executor) DecideRequest(ctx context.Context, p store.DecideParams) (store.Request, bool, error) {
	status := store.RequestRejected
	if p.Verdict == store.VerdictApprove {
		status = store.RequestApproved
	}
	return e.updateRequest(ctx, "deciding request", q.Get("decide_request"),
		status, micros(e.tx.clock(p.Now)), canonicalID(p.RequestID), p.Round, p.PayloadHash)
}

func (e executor) MarkEdited(ctx context.Context, p store.MarkEditedParams) (store.Request, bool, error) {
	return e.updateRequest(ctx, "settling request as edited", q.Get("mark_edited"),
		p.SupersededBy, micros(e.tx.clock(p.Now)), canonicalID(p.RequestID), p.Round, p.PayloadHash)
}

func (e executor) CancelRequest(ctx context.Context, id string, now *time.Time) (store.Request, bool, error) {
	return e.updateRequest(ctx, "cancelling request", q.Get("cancel_request"), micros(e.tx.clock(now)), canonicalID(id))
}

func (e executor) ExpireRequests(ctx context.Context, now *time.Time, limit int) ([]store.Request, error) {
	rows, err := e.tx.QueryContext(ctx, q.Get("expire_requests"), micros(e.tx.clock(now)), limit)
	return collect("expiring requests", scanRequest, rows, err)
}

func (e executor) ReopenRequest(ctx context.Context, p store.ReopenRequestParams) (int, bool, error) {
	var policy *string
	if p.Policy != nil {
		b, err := json.Marshal(p.Policy)
		if err != nil {
			return 0, false, err
		}
		policy = new(string(b))
	}
	r, ok, err := e.updateRequest(ctx, "reopening request", q.Get("reopen_request"),
		micros(p.At), p.TTL.Microseconds(), canonicalID(p.RequestID), p.Round, policy)
	return r.Round, ok, err
}

func (e executor) SetCard(ctx context.Context, id, surface, ref string) error {
	return e.tx.exec(ctx, "recording card", q.Get("set_card"), surface, ref, canonicalID(id))
}

func (e executor) RedriveCard(ctx context.Context, id string, kind store.OutboxKind) error {
	return e.tx.exec(ctx, "re-driving card", q.Get("redrive_card"), micros(e.tx.now), canonicalID(id), string(kind))
}
