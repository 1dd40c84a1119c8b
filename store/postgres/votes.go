package postgres

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

// LockOpenRequest reads the request pending in p.Round with p.PayloadHash
// and unexpired, and holds its row until the transaction ends (SELECT … FOR
// UPDATE). A voter waiting on the lock re-reads the row when it is free, so
// a round decided meanwhile is no longer open.
func (e executor) LockOpenRequest(ctx context.Context, p store.DecideParams) (store.Request, bool, error) {
	rows, err := e.db.Query(ctx, q.Get("lock_open_request"), p.RequestID, p.Round, p.PayloadHash, p.Now)
	return first(collect[store.Request]("locking request", rows, err))
}

func (e executor) InsertVote(ctx context.Context, v store.Vote) (store.Vote, bool, error) {
	var at *time.Time
	if !v.VotedAt.IsZero() {
		at = &v.VotedAt
	}
	rows, err := e.db.Query(ctx, q.Get("insert_vote"), v.RequestID, v.Round, v.Voter, v.Verdict, v.Reason, v.Via, v.PayloadHashSeen, at)
	return first(collect[store.Vote]("recording vote", rows, err))
}

func (e executor) VotesFor(ctx context.Context, requestID string, round int) ([]store.Vote, error) {
	rows, err := e.db.Query(ctx, q.Get("votes_for"), requestID, round)
	return collect[store.Vote]("reading votes", rows, err)
}
