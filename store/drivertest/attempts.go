package drivertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// testSurfaceAttemptsAreCountedOnce: failed attempts are counted per
// surface and key, each once under concurrency (every replica sees one
// count), and a count past its expiry is deleted by the next one counted.
func testSurfaceAttemptsAreCountedOnce(t *testing.T, b *Backend) {
	ctx := context.Background()
	later := time.Now().Add(time.Hour)
	link := store.SurfaceAttempt{Surface: "email", Key: "k1", Expires: later}
	if n, err := b.SurfaceAttempts(ctx, "email", "k1"); err != nil || n != 0 {
		t.Fatalf("an uncounted key = %d, %v; want 0", n, err)
	}
	const workers = 8
	var wg sync.WaitGroup
	seen := make(chan int, workers)
	for range workers {
		wg.Go(func() {
			n, err := b.CountSurfaceAttempt(ctx, link)
			if err != nil {
				t.Error(err)
			}
			seen <- n
		})
	}
	wg.Wait()
	close(seen)
	got := map[int]bool{}
	for n := range seen {
		got[n] = true
	}
	if len(got) != workers || !got[1] || !got[workers] {
		t.Fatalf("concurrent counts returned %v, want each of 1..%d once", got, workers)
	}
	if n, err := b.SurfaceAttempts(ctx, "email", "k1"); err != nil || n != workers {
		t.Fatalf("count = %d, %v; want %d", n, err, workers)
	}
	if n, err := b.SurfaceAttempts(ctx, "teams", "k1"); err != nil || n != 0 {
		t.Fatalf("another surface's count of the key = %d, %v; want 0", n, err)
	}

	expired := store.SurfaceAttempt{Surface: "email", Key: "k2", Expires: time.Now().Add(-time.Minute)}
	if n, err := b.CountSurfaceAttempt(ctx, expired); err != nil || n != 1 {
		t.Fatalf("counting k2 = %d, %v", n, err)
	}
	if _, err := b.CountSurfaceAttempt(ctx, store.SurfaceAttempt{Surface: "email", Key: "k3", Expires: later}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.SurfaceAttempts(ctx, "email", "k2"); err != nil || n != 0 {
		t.Fatalf("an expired count = %d, %v; want it deleted", n, err)
	}
	if n, err := b.SurfaceAttempts(ctx, "email", "k1"); err != nil || n != workers {
		t.Fatalf("a live count after the expired one was deleted = %d, %v; want %d", n, err, workers)
	}
}
