package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"

	"github.com/countersign/countersign/store"
)

// Edit asks to approve a pending request with its effect changed: the
// approver's edit becomes a new request that supersedes the original.
type Edit struct {
	RequestID   string
	Round       int
	PayloadHash string // the hash of the effect the editor was shown
	// Effect is the whole edited effect, a JSON object, decoded as strictly
	// as an intent's.
	Effect   json.RawMessage
	EditedBy string // the editor, as printed (identity.ID.String)
	Via      string // the surface it came through
}

// EditOutcome is what an approval with edit did.
type EditOutcome struct {
	// Original is the edited request, now settled as edited.
	Original store.Request
	// Edit is the new request: approved when the editor's approval met its
	// policy (Approved), else pending with the editor's vote counted.
	Edit     store.Request
	Votes    []store.Vote
	Approved bool
	// Changed names the top-level fields of the effect that changed.
	Changed []string
}

// Progress words where the edit stands, as Outcome.Progress does.
func (o EditOutcome) Progress() string { return Progress(o.Edit.Policy, o.Votes) }

// ApproveWithEdit settles a pending request as edited and stores the
// editor's version of its effect as a new request, approved by the editor:
// the same agent, run, step, tool, summary and reason, its key derived from
// the edited effect as intake derives one. Only an approver who may approve
// the original may edit it (MayVote's refusals, audited as decision_refused),
// and the edited effect must pass what intake checks (the strict decoding
// and the tool's effect schema: the same refusal codes). The edit is tiered
// by the policy in force, and needs at least as many approvals as the
// original did: an edit can need more approvals, never fewer. The editor's
// approval is its first vote, so an edit that needs no more is approved at
// once, and one that does waits for the rest; an editor whom the edit's
// tier does not list as an approver is refused (ErrNotAllowed), and a write
// the policy denies is a *DeniedError. A request no longer pending in that
// round is a *NotPendingError (already_decided), or ErrStaleCard. A
// refused edit stores nothing.
func (s *Service) ApproveWithEdit(ctx context.Context, e Edit) (EditOutcome, error) {
	req, err := s.DB.RequestByID(ctx, e.RequestID)
	if err != nil {
		return EditOutcome{}, err
	}
	attrs := map[string]any{"verdict": store.VerdictApprove, "round": e.Round, "via": e.Via, "edit": true}
	tool, err := s.eligible(ctx, req, e.EditedBy, store.VerdictApprove)
	if err != nil {
		if reason, refused := refusedBecause(err); refused {
			s.refuse(ctx, req, e.EditedBy, store.EventDecisionRefused, reason, attrs)
		}
		return EditOutcome{}, err
	}
	if err := s.stillOpen(ctx, req, e.Round, e.PayloadHash); err != nil {
		return EditOutcome{}, err
	}
	in, err := editedIntent(req, e.Effect)
	if err != nil {
		return EditOutcome{}, err
	}
	if tool.EffectSchema != nil {
		if err := tool.EffectSchema.Check(in.Snapshot); err != nil {
			return EditOutcome{}, err
		}
	}
	payloadHash := PayloadHash(in.Snapshot)
	if payloadHash == req.PayloadHash {
		return EditOutcome{}, invalid("effect", "the edited effect is the request's own: approve it instead")
	}
	key, basisHash, err := Derive(in.Basis())
	if err != nil {
		return EditOutcome{}, invalid("effect", "the effect cannot be put in canonical form (RFC 8785): %v", err)
	}

	// Re-tiered as intake would tier it; a decision the policy makes alone
	// (allow, a grant) does not stand in for the reviewers the original
	// asked for.
	ev, _, err := s.verdict(ctx, tool, req.RequestedBy, req.RequestedFor, in.Snapshot)
	if err != nil {
		return EditOutcome{}, err
	}
	policy := ev.Policy
	if policy.Verdict == VerdictDeny {
		return EditOutcome{}, &DeniedError{Key: key, Tier: policy.TierName, Message: policy.Deny}
	}
	policy.Verdict = VerdictAsk
	policy.Approvals = max(policy.Needed(), req.Policy.Needed())
	if policy.Approvers == nil {
		policy.Approvers = req.Policy.Approvers
	}
	// The editor's approval must count on the edit too: a bigger tier may
	// name other approvers.
	if _, err := s.eligible(ctx, store.Request{Tool: req.Tool, RequestedBy: req.RequestedBy,
		RequestedFor: req.RequestedFor, Policy: policy}, e.EditedBy, store.VerdictApprove); err != nil {
		if reason, refused := refusedBecause(err); refused {
			attrs["tier"] = policy.TierName
			s.refuse(ctx, req, e.EditedBy, store.EventDecisionRefused, reason, attrs)
		}
		return EditOutcome{}, err
	}

	changed := changedFields(req.Snapshot, in.Snapshot)
	res, err := s.DB.Edit(ctx, store.EditParams{
		OriginalID: req.ID, Round: e.Round, PayloadHash: e.PayloadHash, Editor: e.EditedBy, Via: e.Via,
		Edit: store.NewRequest{Key: key, BasisHash: basisHash, RunID: req.RunID, Step: req.Step, Tool: req.Tool,
			Snapshot: in.Snapshot, PayloadHash: payloadHash, Summary: req.Summary, Reason: req.Reason,
			RequestedBy: req.RequestedBy, RequestedFor: req.RequestedFor, TTL: requestTTL(tool), Policy: policy, Now: s.now()},
		Changed: changed, MaxAttempts: maxAttempts(tool), Now: s.now(),
	})
	switch {
	case errors.Is(err, store.ErrEditKeyExists):
		return EditOutcome{}, invalid("effect", "the edited write's key %s names a request already", key)
	case err != nil:
		return EditOutcome{}, err
	case !res.Open:
		out, err := s.explainUndecided(ctx, Decision{RequestID: req.ID, Round: e.Round, PayloadHash: e.PayloadHash})
		if err == nil {
			err = out.Err()
		}
		return EditOutcome{}, err
	}
	out := EditOutcome{Original: res.Original, Edit: res.Edit, Votes: res.Votes, Approved: res.Decided, Changed: changed}
	s.Logger.Info("request edited", slog.String("key", req.Key), slog.String("edit", out.Edit.Key),
		slog.String("by", e.EditedBy), slog.Any("changed", changed), slog.Bool("approved", out.Approved),
		slog.Int("approvals", store.Approvals(out.Votes)), slog.Int("needed", out.Edit.Policy.Needed()))
	return out, nil
}

// stillOpen answers an edit of a round that can no longer be decided before
// anything is checked or written: the decision that stands, or the card is
// stale. Ledger.Edit checks it again under the row's lock.
func (s *Service) stillOpen(ctx context.Context, req store.Request, round int, payloadHash string) error {
	if req.Status == store.RequestPending && req.Round == round && req.PayloadHash == payloadHash {
		return nil
	}
	out, err := s.explainUndecided(ctx, Decision{RequestID: req.ID, Round: round, PayloadHash: payloadHash})
	if err != nil {
		return err
	}
	return out.Err()
}

// editedIntent decodes the edited effect as intake decodes an intent's, in
// the original's run, step and tool: the same refusals, the same canonical
// snapshot.
func editedIntent(req store.Request, effect json.RawMessage) (Intent, error) {
	if len(bytes.TrimSpace(effect)) == 0 {
		return Intent{}, invalid("effect", "the edited effect is missing")
	}
	var body bytes.Buffer
	body.WriteString(`{"run_id":`)
	run, _ := json.Marshal(req.RunID)
	body.Write(run)
	body.WriteString(`,"step":`)
	body.Write(req.Step)
	body.WriteString(`,"tool":`)
	tool, _ := json.Marshal(req.Tool)
	body.Write(tool)
	body.WriteString(`,"effect":`)
	body.Write(effect)
	body.WriteString(`}`)
	return DecodeIntent(body.Bytes())
}

// changedFields names the top-level fields whose values differ between two
// canonical effects (added and removed ones included), sorted.
func changedFields(before, after []byte) []string {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(before, &a)
	_ = json.Unmarshal(after, &b)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if v, ok := b[k]; !ok || !bytes.Equal(v, a[k]) {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b)) {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
