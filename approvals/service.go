package approvals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/store"
)

// Service is intake and review over the store.
type Service struct {
	DB     store.Store
	Tools  map[string]Tool
	Groups GroupResolver // nil: approvers may only be listed by user id
	Logger *slog.Logger
	// Batcher, when set, group-commits new requests; nil inserts each alone.
	Batcher *store.IntakeBatcher
	// Reader, when set, batches the read every intent starts with; nil reads
	// each alone.
	Reader *store.ReplayReader
	// Now pins the clock in tests; nil means the database clock.
	Now func() time.Time
}

func (s *Service) now() *time.Time {
	if s.Now == nil {
		return nil
	}
	t := s.Now()
	return &t
}

// Submit stores an intent under its key, or returns the request the key
// already names. created is false for a replay, which writes nothing. A key
// that names a request with other effect fields is ErrKeyReused, and nothing
// is stored.
func (s *Service) Submit(ctx context.Context, agent string, in Intent) (req store.Request, created bool, err error) {
	tool, ok := s.Tools[in.Tool]
	if !ok {
		return store.Request{}, false, fmt.Errorf("%w: %q", ErrUnknownTool, in.Tool)
	}
	derivedKey, basisHash, err := Derive(in.Basis())
	if err != nil {
		return store.Request{}, false, invalid("effect", "the effect cannot be put in canonical form (RFC 8785): %v", err)
	}
	key := in.IdempotencyKey
	if key == "" {
		key = derivedKey
	}

	// A replay is one read; only a new key goes to the (group-committed) insert.
	read := s.DB.ReplayRequest
	if s.Reader != nil {
		read = s.Reader.Read
	}
	existing, postQueued, err := read(ctx, key)
	switch {
	case err == nil:
		if existing.BasisHash == basisHash && existing.Status == store.RequestPending && existing.CardTS == "" && !postQueued {
			if err := s.DB.RedriveCard(ctx, existing.ID); err != nil {
				return store.Request{}, false, err
			}
		}
		return replay(existing, basisHash)
	case !errors.Is(err, store.ErrNotFound):
		return store.Request{}, false, err
	}

	snapshot := in.Snapshot
	if snapshot == nil {
		if snapshot, err = Canonicalize(in.Effect); err != nil {
			return store.Request{}, false, invalid("effect", "the effect cannot be put in canonical form (RFC 8785): %v", err)
		}
	}
	ttl := tool.RequestTTL
	if ttl <= 0 {
		ttl = DefaultRequestTTL
	}
	insert := func(ctx context.Context, p store.NewRequest) (store.Request, bool, error) {
		return s.DB.InsertRequest(ctx, p)
	}
	if s.Batcher != nil {
		insert = s.Batcher.Insert
	}
	req, inserted, err := insert(ctx, store.NewRequest{
		Key:          key,
		BasisHash:    basisHash,
		RunID:        in.RunID,
		Step:         in.Step,
		Tool:         in.Tool,
		Snapshot:     snapshot,
		PayloadHash:  PayloadHash(snapshot),
		Summary:      in.Summary,
		Reason:       in.Reason,
		RequestedBy:  agent,
		RequestedFor: in.RequestedFor,
		TTL:          ttl,
		Now:          s.now(),
	})
	if err != nil {
		return store.Request{}, false, err
	}
	if !inserted {
		return replay(req, basisHash)
	}
	s.Logger.Info("request created", slog.String("key", req.Key), slog.String("tool", req.Tool), slog.String("agent", agent))
	return req, true, nil
}

func replay(existing store.Request, basisHash string) (store.Request, bool, error) {
	if existing.BasisHash != basisHash {
		return store.Request{}, false, ErrKeyReused
	}
	return existing, false, nil
}

// Get returns the request named by its id or full key.
func (s *Service) Get(ctx context.Context, ref string) (store.Request, error) {
	return s.DB.RequestByRef(ctx, ref)
}

// Cancel withdraws a pending request. A request that is no longer pending is
// a *NotPendingError carrying its status.
func (s *Service) Cancel(ctx context.Context, ref, actor string) (store.Request, error) {
	req, err := s.DB.RequestByRef(ctx, ref)
	if err != nil {
		return store.Request{}, err
	}
	req, cancelled, err := s.DB.CancelRequest(ctx, req.ID, actor, s.now())
	if err != nil {
		return store.Request{}, err
	}
	if !cancelled {
		return req, &NotPendingError{Status: req.Status}
	}
	s.Logger.Info("request cancelled", slog.String("key", req.Key), slog.String("actor", actor))
	return req, nil
}
