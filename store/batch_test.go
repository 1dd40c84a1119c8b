package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// serveTogether has b serve ins as one batch and returns each call's error.
func serveTogether(b *batch[string, string], ins []string) []error {
	calls := make([]*batchCall[string, string], len(ins))
	for i, in := range ins {
		calls[i] = &batchCall[string, string]{in: in, done: make(chan batchResult[string], 1)}
	}
	b.serve(calls)
	errs := make([]error, len(ins))
	for i, c := range calls {
		r := <-c.done
		if r.err == nil && r.out != "out:"+ins[i] {
			r.err = fmt.Errorf("answer %q for %q", r.out, ins[i])
		}
		errs[i] = r.err
	}
	return errs
}

// recordingBatch fails any batch holding "bad" with fail, and records the
// batches it was asked to serve.
func recordingBatch(fail error) (*batch[string, string], func() [][]string) {
	var mu sync.Mutex
	var seen [][]string
	b := newBatch(1, 8, errors.New("stopped"), func(_ context.Context, ins []string) ([]string, error) {
		mu.Lock()
		seen = append(seen, slices.Clone(ins))
		mu.Unlock()
		if slices.Contains(ins, "bad") {
			return nil, fail
		}
		out := make([]string, len(ins))
		for i, in := range ins {
			out[i] = "out:" + in
		}
		return out, nil
	})
	return b, func() [][]string { mu.Lock(); defer mu.Unlock(); return seen }
}

func TestBatchFailureRetriesEachCallAlone(t *testing.T) {
	t.Parallel()
	b, seen := recordingBatch(errors.New("value refused"))
	errs := serveTogether(b, []string{"a", "bad", "c"})
	if errs[0] != nil || errs[1] == nil || errs[2] != nil {
		t.Errorf("errors = %v, want only the bad call to fail", errs)
	}
	want := [][]string{{"a", "bad", "c"}, {"a"}, {"bad"}, {"c"}}
	if got := seen(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("batches served = %v, want %v", got, want)
	}
}

// An outage would fail every call alone too; the batch answers at once.
func TestBatchUnavailableIsNotRetried(t *testing.T) {
	t.Parallel()
	// A driver marks its outages (PostgreSQL's SQLSTATE 57P01 here) with ErrUnavailable.
	shutdown := fmt.Errorf("%w: %w", ErrUnavailable, errors.New("terminating connection due to administrator command (SQLSTATE 57P01)"))
	for _, fail := range []error{shutdown, fmt.Errorf("reading: %w", ErrUnavailable), context.DeadlineExceeded} {
		b, seen := recordingBatch(fail)
		errs := serveTogether(b, []string{"a", "bad", "c"})
		for i, err := range errs {
			if !errors.Is(err, fail) {
				t.Errorf("%v: call %d = %v, want the batch's error", fail, i, err)
			}
		}
		if got := seen(); len(got) != 1 {
			t.Errorf("%v: batches served = %v, want the one batch", fail, got)
		}
	}
}

// Stop waits for the batch its workers are serving, which answers its
// caller; a call after Stop gets the stop error.
func TestBatchStopWaitsForTheBatchBeingServed(t *testing.T) {
	t.Parallel()
	stopErr := errors.New("stopped")
	serving, release := make(chan struct{}), make(chan struct{})
	b := newBatch(2, 4, stopErr, func(_ context.Context, ins []string) ([]string, error) {
		close(serving)
		<-release
		return []string{"out:" + ins[0]}, nil
	})
	ctx := context.Background()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		out, err := b.call(ctx, "a")
		if err == nil && out != "out:a" {
			err = fmt.Errorf("answer %q", out)
		}
		answered <- err
	}()
	<-serving
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop(ctx) }()
	<-b.Stopping()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a batch was being served", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("the call served as Stop began: %v", err)
	}
	if _, err := b.call(ctx, "b"); err != stopErr {
		t.Fatalf("a call after Stop = %v, want the stop error", err)
	}
}
