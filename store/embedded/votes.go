package embedded

import (
	"context"

	"github.com/countersign/countersign/store"
)

// LockOpenRequest reads the request pending in p.Round with p.PayloadHash
// and unexpired. Every write transaction runs on the one writer connection,
// so the voters of a request already take turns.
func (e executor) LockOpenRequest(ctx context.Context, p store.DecideParams) (store.Request, bool, error) {
	req, err := scanRequest(e.tx.QueryRowContext(ctx, q.Get("lock_open_request"),
		canonicalID(p.RequestID), p.Round, p.PayloadHash, micros(e.tx.clock(p.Now))))
	ok, err := found("locking request", err)
	return req, ok, err
}

func (e executor) InsertVote(ctx context.Context, v store.Vote) (store.Vote, bool, error) {
	out, err := scanVote(e.tx.QueryRowContext(ctx, q.Get("insert_vote"), canonicalID(v.RequestID), v.Round, v.Voter,
		v.Verdict, v.Reason, v.Via, v.PayloadHashSeen, micros(e.tx.orClock(v.VotedAt))))
	// No row: the voter voted in this round already.
	cast, err := found("recording vote", err)
	return out, cast, err
}

func (e executor) VotesFor(ctx context.Context, requestID string, round int) ([]store.Vote, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("votes_for"), canonicalID(requestID), round)
	return collect("reading votes", scanVote, rows, err)
}
