package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// InsertRequest stores a new request with its "requested" audit event and the
// outbox row that posts its card, or returns the request the key already
// names (inserted false).
func (s *Store) InsertRequest(ctx context.Context, p store.NewRequest) (store.Request, bool, error) {
	results, err := s.InsertRequests(ctx, []store.NewRequest{p}, p.Now)
	if err != nil {
		return store.Request{}, false, err
	}
	return results[0].Request, results[0].Inserted, nil
}

// InsertRequests stores new requests, each with its audit event and card
// post, in one transaction, and returns one result per request in order; a
// key that exists already is returned and writes nothing. now, when set, is
// the creation time of every request.
func (s *Store) InsertRequests(ctx context.Context, ps []store.NewRequest, now *time.Time) ([]store.InsertResult, error) {
	// Decoding happens before the write lock is taken.
	strs := make([][]string, len(ps))
	for i, p := range ps {
		if !json.Valid(p.Step) {
			return nil, fmt.Errorf("inserting requests: step of %s is not JSON", p.Key)
		}
		strs[i] = p.EffectStrings
		if strs[i] == nil {
			var err error
			if strs[i], err = store.EffectStrings(p.Snapshot); err != nil {
				return nil, fmt.Errorf("inserting requests: %s: %w", p.Key, err)
			}
		}
	}
	results := make([]store.InsertResult, len(ps))
	err := s.write(ctx, func(tx *writeTx) error {
		at := clock(now)
		for i, p := range ps {
			req, inserted, err := insertRequest(ctx, tx, p, strs[i], at)
			if err != nil {
				return fmt.Errorf("inserting requests: %w", err)
			}
			results[i] = store.InsertResult{Request: req, Inserted: inserted}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

func insertRequest(ctx context.Context, tx *writeTx, p store.NewRequest, effectStrings []string, at time.Time) (store.Request, bool, error) {
	req, err := scanRequest(tx.QueryRowContext(ctx, `
INSERT INTO requests (id, key, basis_hash, run_id, step, tool, snapshot, payload_hash,
	summary, reason, requested_by, requested_for, expires_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key) DO NOTHING
RETURNING `+requestColumns,
		newID(), p.Key, p.BasisHash, p.RunID, string(p.Step), p.Tool, p.Snapshot, p.PayloadHash,
		p.Summary, p.Reason, p.RequestedBy, p.RequestedFor, micros(at)+p.TTL.Microseconds(), micros(at), micros(at)))
	if errors.Is(err, store.ErrNotFound) {
		// The key exists: nothing was written, and the stored request stands.
		existing, err := requestByKey(ctx, tx, p.Key)
		return existing, false, err
	}
	if err != nil {
		return store.Request{}, false, err
	}
	for _, v := range effectStrings {
		if _, err := tx.ExecContext(ctx, `INSERT INTO effect_strings (value, request_id) VALUES (?, ?)`, v, req.ID); err != nil {
			return store.Request{}, false, fmt.Errorf("indexing effect: %w", translate(err))
		}
	}
	if err := appendEvent(ctx, tx, req.ID, at, "agent:"+req.RequestedBy, "requested",
		map[string]any{"key": req.Key, "round": req.Round}); err != nil {
		return store.Request{}, false, err
	}
	if err := enqueueOutbox(ctx, tx, store.OutboxPostCard, req.ID, req.Round, nil, at); err != nil {
		return store.Request{}, false, err
	}
	return req, true, nil
}

// ReplayRequest returns the request stored under key, and whether a card post
// for its current round is queued. It only reads.
func (s *Store) ReplayRequest(ctx context.Context, key string) (store.Request, bool, error) {
	var queued bool
	req, err := scanRequestWith(s.reader.QueryRowContext(ctx, `SELECT `+requestColumns+`, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = 'post_card' AND o.state = 'pending')
FROM requests WHERE key = ?`, key), &queued)
	if err != nil {
		return store.Request{}, false, err
	}
	return req, queued, nil
}

// RedriveCard queues a card post for the request's round when it is pending,
// its card was never posted and no post is queued.
func (s *Store) RedriveCard(ctx context.Context, requestID string) error {
	id, _ := canonicalID(requestID)
	return s.write(ctx, func(tx *writeTx) error {
		at := micros(clock(nil))
		if _, err := tx.ExecContext(ctx, `
INSERT INTO outbox (kind, request_id, round, next_attempt_at, created_at)
SELECT 'post_card', r.id, r.round, ?, ? FROM requests r
WHERE r.id = ? AND r.status = 'pending' AND r.card_ts IS NULL
	AND NOT EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = r.id AND o.round = r.round AND o.kind = 'post_card' AND o.state = 'pending')`,
			at, at, id); err != nil {
			return fmt.Errorf("re-driving card: %w", err)
		}
		return nil
	})
}

// RequestByKey returns the request stored under key.
func (s *Store) RequestByKey(ctx context.Context, key string) (store.Request, error) {
	return requestByKey(ctx, s.reader, key)
}

func requestByKey(ctx context.Context, q querier, key string) (store.Request, error) {
	return scanRequest(q.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM requests WHERE key = ?`, key))
}

// RequestByID returns the request with the given id.
func (s *Store) RequestByID(ctx context.Context, id string) (store.Request, error) {
	return requestByID(ctx, s.reader, id)
}

func requestByID(ctx context.Context, q querier, id string) (store.Request, error) {
	id, ok := canonicalID(id)
	if !ok {
		return store.Request{}, store.ErrNotFound
	}
	return scanRequest(q.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM requests WHERE id = ?`, id))
}

// RequestByRef returns the request named by its id or its full key.
func (s *Store) RequestByRef(ctx context.Context, ref string) (store.Request, error) {
	if store.IsUUID(ref) {
		return s.RequestByID(ctx, ref)
	}
	return s.RequestByKey(ctx, ref)
}

// CancelRequest moves a pending request to cancelled with its audit event and
// card update. cancelled is false when the request was no longer pending.
func (s *Store) CancelRequest(ctx context.Context, id, actor string, now *time.Time) (req store.Request, cancelled bool, err error) {
	id, ok := canonicalID(id)
	if !ok {
		return store.Request{}, false, store.ErrNotFound
	}
	err = s.write(ctx, func(tx *writeTx) error {
		at := clock(now)
		req, err = scanRequest(tx.QueryRowContext(ctx, `
UPDATE requests SET status = 'cancelled', updated_at = ? WHERE id = ? AND status = 'pending'
RETURNING `+requestColumns, micros(at), id))
		if errors.Is(err, store.ErrNotFound) {
			req, err = requestByID(ctx, tx, id)
			return err
		}
		if err != nil {
			return fmt.Errorf("cancelling request: %w", err)
		}
		cancelled = true
		tx.requestChanged(req.ID)
		if err := appendEvent(ctx, tx, req.ID, at, actor, "cancelled", map[string]any{"round": req.Round}); err != nil {
			return err
		}
		return enqueueOutbox(ctx, tx, store.OutboxUpdateCard, req.ID, req.Round, nil, at)
	})
	if err != nil {
		return store.Request{}, false, err
	}
	return req, cancelled, nil
}

// ExpireDue moves up to limit pending requests past their expiry to expired,
// each with its audit event and card update, and returns them.
func (s *Store) ExpireDue(ctx context.Context, now *time.Time, limit int) (reqs []store.Request, err error) {
	err = s.write(ctx, func(tx *writeTx) error {
		at := clock(now)
		rows, err := tx.QueryContext(ctx, `
UPDATE requests SET status = 'expired', updated_at = ?1
WHERE id IN (SELECT id FROM requests WHERE status = 'pending' AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2)
RETURNING `+requestColumns, micros(at), limit)
		if err != nil {
			return fmt.Errorf("expiring requests: %w", err)
		}
		if reqs, err = collect(rows, scanRequest); err != nil {
			return fmt.Errorf("expiring requests: %w", err)
		}
		for _, req := range reqs {
			tx.requestChanged(req.ID)
			if err := appendEvent(ctx, tx, req.ID, at, "system", "expired", map[string]any{"round": req.Round}); err != nil {
				return err
			}
			if err := enqueueOutbox(ctx, tx, store.OutboxUpdateCard, req.ID, req.Round, nil, at); err != nil {
				return err
			}
		}
		return nil
	})
	return reqs, err
}

// SetCard records where a request's card was posted.
func (s *Store) SetCard(ctx context.Context, id, channel, ts string) error {
	id, _ = canonicalID(id)
	return s.write(ctx, func(tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE requests SET card_channel = ?, card_ts = ? WHERE id = ?`, channel, ts, id); err != nil {
			return fmt.Errorf("recording card: %w", err)
		}
		return nil
	})
}
