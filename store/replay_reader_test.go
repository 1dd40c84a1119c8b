package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

func TestReplayReaderConcurrentReads(t *testing.T) {
	t.Parallel()
	db := store.NewLedger(storetest.NewDB(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const stored = 30
	ids := map[string]string{}
	for k := range stored {
		req, _, err := db.InsertRequest(ctx, newRequest(fmt.Sprintf("wa_read_%02d", k), "sha256:b"))
		if err != nil {
			t.Fatal(err)
		}
		ids[req.Key] = req.ID
	}
	reader := store.NewReplayReader(db, 2, 8)
	go reader.Run(ctx)

	// Stored and unknown keys, each read by 3 callers at once.
	const keys, callers = 40, 3
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, keys*callers)
	for k := range keys {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				key := fmt.Sprintf("wa_read_%02d", k)
				req, postQueued, err := reader.Read(ctx, key)
				switch {
				case k >= stored && !errors.Is(err, store.ErrNotFound):
					errs <- fmt.Errorf("%s: err %v, want ErrNotFound", key, err)
				case k < stored && err != nil:
					errs <- fmt.Errorf("%s: %v", key, err)
				case k < stored && (req.ID != ids[key] || req.Key != key || !postQueued || len(req.Snapshot) == 0):
					errs <- fmt.Errorf("%s: got %s %s post queued %v", key, req.ID, req.Key, postQueued)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The batched read gives what the single read gives.
	want, wantQueued, err := db.ReplayRequest(ctx, "wa_read_07")
	if err != nil {
		t.Fatal(err)
	}
	got, gotQueued, err := reader.Read(ctx, "wa_read_07")
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) || gotQueued != wantQueued {
		t.Errorf("Read = %+v %v %v, ReplayRequest = %+v %v", got, gotQueued, err, want, wantQueued)
	}

	cancel()
	<-reader.Done()
	if _, _, err := reader.Read(context.Background(), "wa_read_01"); !errors.Is(err, store.ErrReaderStopped) {
		t.Errorf("Read after Run ended = %v, want ErrReaderStopped", err)
	}
}
