package approvals

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/countersign/countersign/receipt"
	"github.com/countersign/countersign/store"
)

// Config is what a Service needs. DB and Tools are required; the rest has
// a default.
type Config struct {
	DB     store.Store
	Tools  map[string]Tool
	Groups GroupResolver // nil: approvers may only be listed by user id
	Logger *slog.Logger  // nil: discard
	// Batcher, when set, group-commits new requests; nil inserts each alone.
	Batcher *store.IntakeBatcher
	// Now pins the clock in tests; nil means the database clock.
	Now func() time.Time
	// Owners are the people who own each agent, by agent name: they may not
	// approve its requests.
	Owners map[string][]string
	// Metrics, when set, counts votes; nil counts nothing.
	Metrics *Metrics
	// Receipts, when set, signs the receipts of agent-executed tools'
	// approvals; nil gives none.
	Receipts *receipt.KeySet
}

// Validate reports every missing or inconsistent field at once.
func (c Config) Validate() error {
	var errs []error
	if c.DB == nil {
		errs = append(errs, errors.New("approvals: DB is required"))
	}
	if c.Tools == nil {
		errs = append(errs, errors.New("approvals: Tools is required (empty refuses every intent as an unknown tool)"))
	}
	for name, t := range c.Tools {
		if t.Name != "" && t.Name != name {
			errs = append(errs, fmt.Errorf("approvals: tool %q is named %q", name, t.Name))
		}
	}
	return errors.Join(errs...)
}

// New validates cfg and returns a Service built from it, with defaults for
// what cfg leaves zero. The Service is complete when New returns: nothing
// needs setting on it afterwards.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{
		DB: cfg.DB, Tools: cfg.Tools, Groups: cfg.Groups, Logger: cfg.Logger,
		Batcher: cfg.Batcher, Now: cfg.Now, Owners: cfg.Owners, Metrics: cfg.Metrics,
		Receipts: cfg.Receipts,
	}, nil
}

// Service is intake and review over the store. Build it with New; tests
// may pin Now and adjust Tools before it is used.
type Service struct {
	DB     store.Store
	Tools  map[string]Tool
	Groups GroupResolver
	Logger *slog.Logger
	// Batcher, when set, group-commits new requests; nil inserts each alone.
	Batcher *store.IntakeBatcher
	// Now pins the clock in tests; nil means the database clock.
	Now func() time.Time
	// Owners are the people who own each agent, by agent name.
	Owners map[string][]string
	// Metrics, when set, counts votes.
	Metrics *Metrics
	// Receipts signs agent-executed approvals' receipts; nil signs none.
	Receipts *receipt.KeySet

	// reloaded, once set by Reconfigure, replaces Tools and Owners.
	reloaded reloaded
}

// Tool returns the configuration of the tool named name.
func (s *Service) Tool(name string) (Tool, bool) {
	t, ok := s.CurrentTools()[name]
	return t, ok
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
// that names a request with other effect fields is ErrKeyReused, one that
// names another agent's request is ErrKeyTaken whatever its fields, and
// nothing is stored. A requested_for that is not a user id is an
// *InputError (invalid_request).
func (s *Service) Submit(ctx context.Context, agent string, in Intent) (req store.Request, created bool, err error) {
	tools := s.CurrentTools()
	tool, ok := tools[in.Tool]
	if !ok {
		// Every agent may use every configured tool.
		return store.Request{}, false, &UnknownToolError{Tool: in.Tool, Available: slices.Sorted(maps.Keys(tools))}
	}
	if in.RequestedFor, err = requestedFor(in.RequestedFor); err != nil {
		return store.Request{}, false, err
	}
	if tool.EffectSchema != nil {
		// Before the key or the store: a refused effect leaves no trace, and
		// the schema never touches what the key is derived from.
		effect := in.Snapshot
		if effect == nil {
			effect = in.Effect
		}
		if err := tool.EffectSchema.Check(effect); err != nil {
			return store.Request{}, false, err
		}
	}
	derivedKey, basisHash, err := Derive(in.Basis())
	if err != nil {
		return store.Request{}, false, invalid("effect", "the effect cannot be put in canonical form (RFC 8785): %v", err)
	}
	key := in.IdempotencyKey
	if key == "" {
		key = derivedKey
	}
	if key != derivedKey {
		// The whole rule again, whoever decoded the intent: a key that is
		// not derived is stored as sent and reaches the provider as a
		// header, so it must survive one unchanged and must not pass for a
		// derived key.
		if err := CheckClientKey(key, derivedKey); err != nil {
			return store.Request{}, false, invalid("idempotency_key", "%v", err)
		}
	}

	// The store reads the key first or inserts first, as suits it
	// (store.Ledger.Intake); build runs only for an intent it has to store.
	var decided *store.AutoDecision // counted once the request is stored
	build := func() (store.NewRequest, error) {
		snapshot := in.Snapshot
		if snapshot == nil {
			var err error
			if snapshot, err = Canonicalize(in.Effect); err != nil {
				return store.NewRequest{}, invalid("effect", "the effect cannot be put in canonical form (RFC 8785): %v", err)
			}
		}
		ev, auto, err := s.verdict(ctx, tool, agent, in.RequestedFor, snapshot)
		if err != nil {
			return store.NewRequest{}, err
		}
		decided = auto
		return store.NewRequest{
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
			TTL:          requestTTL(tool),
			Policy:       ev.Policy,
			Decided:      decided,
			Now:          s.now(),
		}, nil
	}
	var insert func(context.Context, store.NewRequest) (store.InsertResult, error)
	if s.Batcher != nil {
		insert = s.Batcher.Insert
	}
	res, err := s.DB.Intake(ctx, key, build, insert)
	if err != nil {
		return store.Request{}, false, err
	}
	if res.Pruned != nil {
		return store.Request{}, false, pruned(*res.Pruned, agent, basisHash)
	}
	if !res.Inserted {
		return s.answerReplay(ctx, res.Request, res.PostQueued, agent, basisHash)
	}
	req = res.Request
	s.Metrics.decidedAtIntake(decided)
	s.Logger.InfoContext(ctx, "request created", slog.String("key", req.Key), slog.String("tool", req.Tool),
		slog.String("agent", agent), slog.String("verdict", string(req.Policy.Verdict)), slog.String("rule", req.Policy.TierName))
	if req.Policy.Verdict == VerdictDeny {
		return req, true, deniedBy(req)
	}
	return req, true, nil
}

// answerReplay answers a key that already names a request. When it is the
// caller's own pending request and no card for it was posted or is queued
// (the post failed for good), it queues the card again.
func (s *Service) answerReplay(ctx context.Context, existing store.Request, postQueued bool, agent, basisHash string) (store.Request, bool, error) {
	if existing.RequestedBy == agent && existing.BasisHash == basisHash &&
		existing.Status == store.RequestPending && existing.CardRef == "" && !postQueued {
		if err := s.DB.RedriveCard(ctx, existing.ID); err != nil {
			return store.Request{}, false, err
		}
	}
	return replay(existing, agent, basisHash)
}

// replay answers a key that already names a request. Another agent's request
// is refused before its fields are compared, so the answer does not tell the
// caller whether it guessed them (an admin included: a replay returns the
// caller's own request, and admins read others' with Get).
func replay(existing store.Request, agent, basisHash string) (store.Request, bool, error) {
	if existing.RequestedBy != agent {
		return store.Request{}, false, ErrKeyTaken
	}
	if existing.BasisHash != basisHash {
		return store.Request{}, false, ErrKeyReused
	}
	if existing.Policy.Verdict == VerdictDeny {
		return existing, false, deniedBy(existing)
	}
	return existing, false, nil
}

// pruned answers a key whose request was pruned as replay answers one
// that is stored: another agent's key is ErrKeyTaken and another basis
// ErrKeyReused, whatever the request became; the same intent learns how it
// ended. The key is never stored again.
func pruned(t store.Tombstone, agent, basisHash string) error {
	if t.Agent != agent {
		return ErrKeyTaken
	}
	if t.BasisHash != basisHash {
		return ErrKeyReused
	}
	return &PrunedError{Status: t.Status, SettledAt: t.SettledAt}
}

// Get returns the request named by its id or full key, if agent may see it.
// Another agent's request is ErrNotFound, as if it did not exist.
func (s *Service) Get(ctx context.Context, agent Agent, ref string) (store.Request, error) {
	req, err := s.DB.RequestByRef(ctx, ref)
	if err != nil {
		return store.Request{}, err
	}
	if !agent.Sees(req) {
		s.Logger.WarnContext(ctx, "request hidden from another agent", slog.String("key", req.Key),
			slog.String("agent", agent.Name), slog.String("owner", req.RequestedBy))
		return store.Request{}, ErrNotFound
	}
	return req, nil
}

// Cancel withdraws a pending request agent may see. A request that is no
// longer pending is a *NotPendingError carrying its status and the decision
// that stands, if one does.
func (s *Service) Cancel(ctx context.Context, agent Agent, ref string) (store.Request, error) {
	req, err := s.Get(ctx, agent, ref)
	if err != nil {
		return store.Request{}, err
	}
	actor := store.AgentActor(agent.Name)
	req, cancelled, err := s.DB.CancelRequest(ctx, req.ID, actor, s.now())
	if err != nil {
		return store.Request{}, err
	}
	if !cancelled {
		notPending := &NotPendingError{Status: req.Status}
		if req.Status == store.RequestApproved || req.Status == store.RequestRejected {
			d, err := s.DB.DecisionFor(ctx, req.ID, req.Round)
			switch {
			case err == nil:
				notPending.Decision = &d
			case !errors.Is(err, store.ErrNotFound):
				return store.Request{}, err
			}
		}
		return req, notPending
	}
	s.Logger.InfoContext(ctx, "request cancelled", slog.String("key", req.Key), slog.String("actor", actor))
	return req, nil
}
