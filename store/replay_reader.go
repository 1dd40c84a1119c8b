package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ReplayReader does the read every intent starts with (ReplayRequest) for
// all the intents that arrive while the previous read runs, in one query:
// under load, one round trip and one statement serve many agents. With a
// single caller a batch is just that caller. It only reads.
type ReplayReader struct {
	*batch[string, replayRead]
}

type replayRead struct {
	req        Request
	postQueued bool
	found      bool
}

// ErrReaderStopped is returned by Read once the reader's Run has ended.
var ErrReaderStopped = errors.New("replay reader stopped")

// NewReplayReader returns a reader that looks up to maxBatch keys at a time
// from readers concurrent queries. Run starts it.
func NewReplayReader(db DBTX, readers, maxBatch int) *ReplayReader {
	return &ReplayReader{newBatch(readers, maxBatch, ErrReaderStopped,
		func(ctx context.Context, keys []string) ([]replayRead, error) {
			found, err := replayRequests(ctx, db, keys)
			if err != nil {
				return nil, err
			}
			out := make([]replayRead, len(keys))
			for i, key := range keys {
				f, ok := found[key]
				out[i] = replayRead{req: f.req, postQueued: f.postQueued, found: ok}
			}
			return out, nil
		})}
}

// Read returns what ReplayRequest returns for key, from whichever batch it joins.
func (r *ReplayReader) Read(ctx context.Context, key string) (req Request, postQueued bool, err error) {
	res, err := r.call(ctx, key)
	switch {
	case err != nil:
		return Request{}, false, err
	case !res.found:
		return Request{}, false, ErrNotFound
	}
	return res.req, res.postQueued, nil
}

type replayed struct {
	req        Request
	postQueued bool
}

// replayRequests is ReplayRequest for several keys at once: the requests
// found, by key, and whether a card post for each one's round is queued.
func replayRequests(ctx context.Context, db DBTX, keys []string) (map[string]replayed, error) {
	if len(keys) == 1 {
		req, postQueued, err := ReplayRequest(ctx, db, keys[0])
		if errors.Is(err, ErrNotFound) {
			return map[string]replayed{}, nil
		}
		if err != nil {
			return nil, err
		}
		return map[string]replayed{keys[0]: {req, postQueued}}, nil
	}
	// Planned for each call (no cached generic plan), so an empty table's
	// sequential scan never outlives it: the key list is looked up through
	// the unique index once the table has grown.
	rows, err := db.Query(ctx, `SELECT `+requestColumns+`, EXISTS (SELECT 1 FROM outbox o
		WHERE o.request_id = requests.id AND o.round = requests.round AND o.kind = 'post_card' AND o.state = 'pending') AS post_queued
FROM requests WHERE key = ANY($1)`, pgx.QueryExecModeCacheDescribe, keys)
	if err != nil {
		return nil, fmt.Errorf("reading requests: %w", err)
	}
	defer rows.Close()
	out := make(map[string]replayed, len(keys))
	for rows.Next() {
		var r replayed
		if err := scanRequest(rows, &r.req, &r.postQueued); err != nil {
			return nil, fmt.Errorf("reading requests: %w", err)
		}
		out[r.req.Key] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading requests: %w", err)
	}
	return out, nil
}
