package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/countersign/countersign/store"
)

func TestIntakeBatcherConcurrentInserts(t *testing.T) {
	forEachStore(t, func(t *testing.T, b *backend) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		batcher := store.NewIntakeBatcher(b, 2, 8)
		go batcher.Run(ctx)

		// 40 distinct keys, each sent by 3 callers at once: 120 calls.
		const keys, callers = 40, 3
		type outcome struct {
			id       string
			inserted bool
			err      error
		}
		outcomes := make([][callers]outcome, keys)
		release(keys*callers, func(i int) {
			k, c := i/callers, i%callers
			req, inserted, err := batcher.Insert(ctx, newRequest(fmt.Sprintf("wa_batch_%02d", k), "sha256:b"))
			outcomes[k][c] = outcome{req.ID, inserted, err}
		})
		for k := range keys {
			inserted := 0
			for c := range callers {
				o := outcomes[k][c]
				if o.err != nil {
					t.Fatalf("key %d caller %d: %v", k, c, o.err)
				}
				if o.id != outcomes[k][0].id {
					t.Errorf("key %d: callers got different ids", k)
				}
				if o.inserted {
					inserted++
				}
			}
			if inserted != 1 {
				t.Errorf("key %d: %d callers report inserted, want 1", k, inserted)
			}
		}
		if requests, events := b.count(t, `SELECT count(*) FROM requests`), b.count(t, `SELECT count(*) FROM events`); requests != keys || events != keys {
			t.Errorf("requests %d, events %d; want %d each", requests, events, keys)
		}

		cancel()
		<-batcher.Done()
		if _, _, err := batcher.Insert(context.Background(), newRequest("wa_after_stop", "sha256:b")); err != store.ErrBatcherStopped {
			t.Errorf("Insert after Run ended = %v, want ErrBatcherStopped", err)
		}
	})
}
