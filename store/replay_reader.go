package store

import (
	"context"
	"errors"
)

// ReplayReader does the read every intent starts with (ReplayRequest) for
// all the intents that arrive while the previous read runs, in one query:
// under load, one round trip and one statement serve many agents. With a
// single caller a batch is just that caller. It only reads. It pays only on
// a driver whose BatchesReads is true.
type ReplayReader struct {
	*batch[string, replayRead]
}

type replayRead struct {
	Replayed
	found bool
}

// ErrReaderStopped is returned by Read once the reader's Run has ended.
var ErrReaderStopped = errors.New("replay reader stopped")

// NewReplayReader returns a reader of l that looks up to maxBatch keys at a
// time from readers concurrent queries. Run starts it.
func NewReplayReader(l *Ledger, readers, maxBatch int) *ReplayReader {
	return &ReplayReader{newBatch(readers, maxBatch, ErrReaderStopped,
		func(ctx context.Context, keys []string) ([]replayRead, error) {
			found, err := l.ReplayRequests(ctx, keys)
			if err != nil {
				return nil, err
			}
			out := make([]replayRead, len(keys))
			for i, key := range keys {
				f, ok := found[key]
				out[i] = replayRead{Replayed: f, found: ok}
			}
			return out, nil
		})}
}

// Read returns what ReplayRequest returns for key, from whichever batch it joins.
func (r *ReplayReader) Read(ctx context.Context, key string) (req Request, postQueued bool, err error) {
	if holdsNUL(key) {
		return Request{}, false, ErrNotFound
	}
	res, err := r.call(ctx, key)
	switch {
	case err != nil:
		return Request{}, false, err
	case !res.found:
		return Request{}, false, ErrNotFound
	}
	return res.Request, res.PostQueued, nil
}
