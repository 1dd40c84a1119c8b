package store

import (
	"context"
	"fmt"
)

// Vote casts one reviewer's vote on a request round, in one transaction:
// it locks the request (pending in p.Round with p.PayloadHash, unexpired),
// records the vote unless the reviewer voted in this round already, and
// decides the round when this vote is a reject or the approval that meets
// the request's frozen policy. Voters on one request take turns on its row,
// so exactly one of them sees the count reach the policy, on any number of
// replicas; the one-decision-per-round constraint backs it. Every vote
// writes its audit event ("voted") and a card update; the deciding one also
// writes what Decide writes, and the standing grant p.Grant asks for. Eligibility is the caller's to check.
func (l *Ledger) Vote(ctx context.Context, p VoteParams) (res VoteResult, err error) {
	if !IsUUID(p.RequestID) {
		return VoteResult{}, nil
	}
	err = l.inTx(ctx, func(ex Executor) error {
		res = VoteResult{}
		req, open, err := ex.LockOpenRequest(ctx, p)
		if err != nil || !open {
			return err
		}
		res.Open, res.Request = true, req
		vote := Vote{RequestID: req.ID, Round: req.Round, Voter: p.DecidedBy, Verdict: p.Verdict,
			Reason: p.Reason, Via: p.Via, PayloadHashSeen: p.PayloadHash}
		if p.Now != nil {
			vote.VotedAt = *p.Now
		}
		if res.Vote, res.Cast, err = ex.InsertVote(ctx, vote); err != nil {
			return err
		}
		if res.Votes, err = ex.VotesFor(ctx, req.ID, req.Round); err != nil {
			return err
		}
		if !res.Cast {
			for _, v := range res.Votes {
				if v.Voter == p.DecidedBy {
					res.Vote = v
				}
			}
			return nil
		}
		approvals := Approvals(res.Votes)
		data := map[string]any{"verdict": p.Verdict, "round": req.Round, "via": p.Via,
			"payload_hash_seen": p.PayloadHash, "approvals": approvals, "needed": req.Policy.Needed()}
		if p.Reason != "" {
			data["reason"] = p.Reason
		}
		if err := write(ctx, ex, []Event{{RequestID: req.ID, At: res.Vote.VotedAt, Actor: p.DecidedBy, Kind: EventVoted, Data: data}}, nil); err != nil {
			return fmt.Errorf("auditing vote: %w", err)
		}
		// A vote is a change an agent can see (the representation lists
		// the round's votes).
		if err := notify(ctx, ex, changed(req.ID)); err != nil {
			return err
		}
		if p.Verdict == VerdictApprove && approvals < req.Policy.Needed() {
			// The round stays pending, so the card's state does not change:
			// the row says why it must be drawn again anyway.
			// A waiting update that is not told so may skip drawing an
			// unchanged state: this one is queued on its own.
			update := updateCard(req.ID, req.Round, res.Vote.VotedAt)
			update.Data, update.Coalesce = map[string]any{"reason": OutboxReasonVote}, false
			return write(ctx, ex, nil, []NewOutbox{update})
		}
		d := p
		d.Now = &res.Vote.VotedAt
		res.Request, res.Decision, res.Decided, err = l.decideTx(ctx, ex, d)
		if err == nil && !res.Decided {
			err = fmt.Errorf("deciding request %s: the locked row did not move", req.ID)
		}
		if err == nil && p.Grant != nil && p.Verdict == VerdictApprove {
			g, err := createGrant(ctx, ex, res.Request, res.Decision, *p.Grant)
			res.Grant = &g
			return err
		}
		return err
	})
	if err != nil {
		return VoteResult{}, err
	}
	return res, nil
}

// OutboxReasonVote marks a card update queued by a vote that left the round
// open: the card shows the same state with one more vote.
const OutboxReasonVote = "vote"
