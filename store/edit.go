package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrEditKeyExists is returned by Edit when the edited request's key names
// a request already (or a pruned one): the edit would be that request.
// Nothing is written.
var ErrEditKeyExists = errors.New("the edited write's key names a request already")

// MarkEditedParams says which open round MarkEdited settles as edited.
type MarkEditedParams struct {
	RequestID    string
	Round        int
	PayloadHash  string // the hash the editor was shown
	SupersededBy string // the edit's key
	Now          *time.Time
}

// EditParams is an approver's edit of a pending request: the original as the
// editor saw it (its round and payload hash), and the edited write as intake
// would store it (its key derived from the edited effect, its policy
// re-tiered), which the editor's vote approves.
type EditParams struct {
	OriginalID  string
	Round       int
	PayloadHash string
	// Editor is the approver, as the audit names them, and Via the surface
	// they edited on.
	Editor string
	Via    string
	// Edit is the new request; Ledger.Edit sets its Supersedes. Its
	// Decided must be nil: an edit is decided by votes.
	Edit NewRequest
	// Changed names the top-level fields of the effect the edit changed,
	// for the audit.
	Changed []string
	// MaxAttempts is the edit's execution's attempt cap, when the editor's
	// vote approves it.
	MaxAttempts int
	Reason      string
	Now         *time.Time
}

// EditResult is what an edit did.
type EditResult struct {
	// Open is false when the original was not pending in that round with
	// that payload hash and unexpired: nothing was written (a decision or
	// another edit came first), and Original is the request as it stands.
	Open     bool
	Original Request
	// Edit is the new request, after the editor's vote.
	Edit Request
	// Votes are the edit's first round's votes: the editor's approval.
	Votes []Vote
	// Decided is true when the editor's approval met the edit's policy;
	// Decision is then its decision (and its execution exists).
	Decided  bool
	Decision Decision
}

// Edit settles a pending request as edited and stores the approver's edit as
// a new request that supersedes it, in one transaction: it locks the
// original (pending in p.Round with p.PayloadHash, unexpired), inserts the
// edit (its "requested" event and card post, as intake writes them), links
// both ways by key, settles the original as edited (its "edited" event with
// the editor and the changed fields, its card update, its request.edited
// callback), and casts the editor's approval on the edit, deciding it when
// that meets the edit's policy. A decision or an edit racing on the
// original takes its row lock first or after: exactly one wins, and the
// other finds it no longer open. Eligibility and the edit's schema are the
// caller's to check.
func (l *Ledger) Edit(ctx context.Context, p EditParams) (res EditResult, err error) {
	if !IsUUID(p.OriginalID) {
		return EditResult{}, ErrNotFound
	}
	if p.Edit.Decided != nil {
		return EditResult{}, fmt.Errorf("editing request: an edit is decided by votes, not at intake")
	}
	if p.Edit.EffectStrings == nil {
		if p.Edit.EffectStrings, err = EffectStrings(p.Edit.Snapshot); err != nil {
			return EditResult{}, fmt.Errorf("editing request: %w", err)
		}
	}
	err = l.inTx(ctx, func(ex Executor) error {
		res = EditResult{}
		orig, open, err := ex.LockOpenRequest(ctx, DecideParams{RequestID: p.OriginalID, Round: p.Round,
			PayloadHash: p.PayloadHash, Now: p.Now})
		if err != nil {
			return fmt.Errorf("editing request: %w", err)
		}
		if !open {
			res.Original, err = ex.RequestByID(ctx, p.OriginalID)
			return err
		}
		edit := p.Edit
		edit.Supersedes = orig.Key
		req, inserted, err := ex.InsertRequest(ctx, edit, p.Now)
		if err != nil {
			return fmt.Errorf("editing request: %w", err)
		}
		if !inserted {
			return ErrEditKeyExists
		}
		orig, ok, err := ex.MarkEdited(ctx, MarkEditedParams{RequestID: orig.ID, Round: orig.Round,
			PayloadHash: p.PayloadHash, SupersededBy: req.Key, Now: &req.CreatedAt})
		if err != nil {
			return fmt.Errorf("editing request: %w", err)
		}
		if !ok { // locked open above: only a bug lands here
			return fmt.Errorf("editing request: the locked request %s did not move", orig.ID)
		}
		res.Open, res.Original = true, orig

		requestedOwed := requested(edit)
		requestedOwed.Events[0].Data["supersedes"] = orig.Key
		requestedOwed.Events[0].Data["edited_by"] = p.Editor
		var o owing
		o.add(requestedOwed, req.ID, req.Round, req.CreatedAt)
		o.add(Owed{
			Events: []Event{{Actor: p.Editor, Kind: EventEdited, Data: map[string]any{
				"round": orig.Round, "via": p.Via, "payload_hash_seen": p.PayloadHash,
				"superseded_by": req.Key, "superseded_by_id": req.ID, "changed": p.Changed}}},
			Outbox: []NewOutbox{cardUpdate()},
		}, orig.ID, orig.Round, orig.UpdatedAt)
		if err := o.write(ctx, ex); err != nil {
			return err
		}
		if err := l.queueCallback(ctx, ex, orig.ID, orig.RequestedBy, CallbackEdited, orig.UpdatedAt); err != nil {
			return err
		}
		if err := notify(ctx, ex, changed(orig.ID, req.ID)); err != nil {
			return err
		}

		// The editor approves what they wrote: their vote is the edit's
		// first, cast as Vote casts one.
		vote, _, err := ex.InsertVote(ctx, Vote{RequestID: req.ID, Round: req.Round, Voter: p.Editor,
			Verdict: VerdictApprove, Reason: p.Reason, Via: p.Via, PayloadHashSeen: req.PayloadHash, VotedAt: req.CreatedAt})
		if err != nil {
			return fmt.Errorf("editing request: %w", err)
		}
		if res.Votes, err = ex.VotesFor(ctx, req.ID, req.Round); err != nil {
			return err
		}
		approvals := Approvals(res.Votes)
		data := map[string]any{"verdict": VerdictApprove, "round": req.Round, "via": p.Via,
			"payload_hash_seen": req.PayloadHash, "approvals": approvals, "needed": req.Policy.Needed()}
		if p.Reason != "" {
			data["reason"] = p.Reason
		}
		if err := write(ctx, ex, []Event{{RequestID: req.ID, At: vote.VotedAt, Actor: p.Editor, Kind: EventVoted, Data: data}}, nil); err != nil {
			return fmt.Errorf("auditing vote: %w", err)
		}
		res.Edit = req
		if approvals < req.Policy.Needed() {
			return nil // the edit's card, queued above, asks for the rest
		}
		res.Edit, res.Decision, res.Decided, err = l.decideTx(ctx, ex, DecideParams{RequestID: req.ID, Round: req.Round,
			PayloadHash: req.PayloadHash, Verdict: VerdictApprove, DecidedBy: p.Editor, Via: p.Via,
			MaxAttempts: p.MaxAttempts, Reason: p.Reason, Now: &vote.VotedAt})
		if err == nil && !res.Decided {
			err = fmt.Errorf("editing request: the edit %s could not be decided", req.ID)
		}
		return err
	})
	if err != nil {
		return EditResult{}, err
	}
	return res, nil
}
