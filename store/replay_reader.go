package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReplayReader does the read every intent starts with (ReplayRequest) for
// all the intents that arrive while the previous read runs, in one query:
// under load, one round trip and one statement serve many agents. With a
// single caller a batch is just that caller. It only reads.
type ReplayReader struct {
	db       DBTX
	queue    chan *queuedRead
	maxBatch int
	readers  int
	stopped  chan struct{} // closed when Run has ended
}

type queuedRead struct {
	key  string
	done chan replayRead
}

type replayRead struct {
	req        Request
	postQueued bool
	err        error
}

// NewReplayReader returns a reader that looks up to maxBatch keys at a time
// from readers concurrent queries. Run starts it.
func NewReplayReader(db DBTX, readers, maxBatch int) *ReplayReader {
	return &ReplayReader{
		db: db, queue: make(chan *queuedRead, maxBatch*readers),
		maxBatch: maxBatch, readers: readers, stopped: make(chan struct{}),
	}
}

// Read returns what ReplayRequest returns for key, from whichever batch it joins.
func (r *ReplayReader) Read(ctx context.Context, key string) (req Request, postQueued bool, err error) {
	q := &queuedRead{key: key, done: make(chan replayRead, 1)}
	select {
	case r.queue <- q:
	case <-r.stopped:
		return Request{}, false, ErrReaderStopped
	case <-ctx.Done():
		return Request{}, false, ctx.Err()
	}
	select {
	case res := <-q.done:
		return res.req, res.postQueued, res.err
	case <-r.stopped:
		return Request{}, false, ErrReaderStopped
	case <-ctx.Done():
		return Request{}, false, ctx.Err()
	}
}

// Done is closed once Run has ended.
func (r *ReplayReader) Done() <-chan struct{} { return r.stopped }

// ErrReaderStopped is returned by Read once the reader's Run has ended.
var ErrReaderStopped = errors.New("replay reader stopped")

// Run reads batches until ctx ends; Read fails afterwards.
func (r *ReplayReader) Run(ctx context.Context) {
	defer close(r.stopped)
	done := make(chan struct{})
	for range r.readers {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-ctx.Done():
					return
				case first := <-r.queue:
					r.read(r.collect(first))
				}
			}
		}()
	}
	for range r.readers {
		<-done
	}
}

// collect takes what is already queued behind first, without waiting.
func (r *ReplayReader) collect(first *queuedRead) []*queuedRead {
	batch := []*queuedRead{first}
	for len(batch) < r.maxBatch {
		select {
		case q := <-r.queue:
			batch = append(batch, q)
		default:
			return batch
		}
	}
	return batch
}

func (r *ReplayReader) read(batch []*queuedRead) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := make([]string, len(batch))
	for i, q := range batch {
		keys[i] = q.key
	}
	found, err := replayRequests(ctx, r.db, keys)
	for _, q := range batch {
		res := replayRead{err: err}
		if err == nil {
			if f, ok := found[q.key]; ok {
				res.req, res.postQueued = f.req, f.postQueued
			} else {
				res.err = ErrNotFound
			}
		}
		q.done <- res
	}
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
