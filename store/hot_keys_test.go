package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/countersign/countersign/store"
)

// A replay of a key this process stored lately is read, not inserted: on
// every store, intake never builds the request again nor asks the insert,
// and the answer is the stored request. A new key still goes to the insert.
func TestReplayOfAHotKeyIssuesNoWrite(t *testing.T) {
	forEachStore(t, func(t *testing.T, b *backend) {
		ctx := context.Background()
		inserts := 0
		insert := func(ctx context.Context, p store.NewRequest) (store.InsertResult, error) {
			inserts++
			rs, err := b.InsertRequests(ctx, []store.NewRequest{p}, nil)
			if err != nil {
				return store.InsertResult{}, err
			}
			return rs[0], nil
		}
		stored := make([]store.Request, 3)
		for i := range stored {
			p := newRequest(fmt.Sprintf("wa_hot_%d", i), "sha256:b")
			res, err := b.Intake(ctx, p.Key, func() (store.NewRequest, error) { return p, nil }, insert)
			if err != nil || !res.Inserted {
				t.Fatalf("first intake of %s = %+v, %v", p.Key, res, err)
			}
			stored[i] = res.Request
		}
		if inserts != 3 {
			t.Fatalf("%d inserts for 3 new keys", inserts)
		}
		for range 2 {
			for _, want := range stored {
				res, err := b.Intake(ctx, want.Key, func() (store.NewRequest, error) {
					t.Errorf("replay of %s built a request to insert", want.Key)
					return newRequest(want.Key, "sha256:b"), nil
				}, insert)
				if err != nil || res.Inserted || res.Request.ID != want.ID {
					t.Errorf("replay of %s = %+v, %v; want request %s", want.Key, res, err, want.ID)
				}
			}
		}
		if inserts != 3 {
			t.Errorf("replays asked the insert %d times", inserts-3)
		}
	})
}
