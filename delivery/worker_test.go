package delivery_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/delivery"
)

// item is a queued delivery of the in-memory queue.
type item struct {
	id       int
	lane     string
	attempts int
	lease    int // bumped by each renewal, as a callback's claim is
}

// queue is an in-memory Queue that records every outcome.
type queue struct {
	mu       sync.Mutex
	items    []item
	outcomes map[int]delivery.Outcome
	recorded map[int]item // the item as Record saw it
	renewals int
	onRenew  func(renewals int)
}

func (q *queue) Claim(_ context.Context, limit int, _ time.Duration) ([]item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(limit, len(q.items))
	out := q.items[:n]
	q.items = q.items[n:]
	for i := range out {
		out[i].attempts++
	}
	return out, nil
}

func (q *queue) Renew(_ context.Context, held []item, _ time.Duration) ([]item, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.renewals++
	if q.onRenew != nil {
		q.onRenew(q.renewals)
	}
	out := slices.Clone(held)
	for i := range out {
		out[i].lease++
	}
	return out, nil
}

func (q *queue) Attempts(it item) int { return it.attempts }

func (q *queue) Record(_ context.Context, it item, o delivery.Outcome) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.outcomes[it.id] = o
	q.recorded[it.id] = it
	return nil
}

func newQueue(items ...item) *queue {
	return &queue{items: items, outcomes: map[int]delivery.Outcome{}, recorded: map[int]item{}}
}

// budget is a Budget with no spacing whose pauses are kept in memory.
type budget struct {
	mu     sync.Mutex
	paused map[string]time.Time
}

func (b *budget) TakeSlot(context.Context, string, time.Duration) (time.Duration, error) {
	return 0, nil
}

func (b *budget) Pause(_ context.Context, lane string, d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused[lane] = time.Now().Add(d)
	return nil
}

func (b *budget) PauseLeft(_ context.Context, lane string) (time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(time.Until(b.paused[lane]), 0), nil
}

// One RunOnce: a lane's items go in order, one at a time; a rate limit
// pauses its lane, so the lane's next item is put back without an
// attempt while another lane goes on; a transient failure is retried
// after its backoff, and fails once its attempts run out; a permanent one
// fails at once.
func TestWorkerClassifiesEachAttempt(t *testing.T) {
	t.Parallel()
	q := newQueue(
		item{id: 1, lane: "a"}, item{id: 2, lane: "a"}, item{id: 3, lane: "a"},
		item{id: 4, lane: "b"}, item{id: 5, lane: "b"}, item{id: 6, lane: "b", attempts: 2},
	)
	var mu sync.Mutex
	var orderA []int
	errs := map[int]error{
		2: &delivery.Failure{Class: delivery.RateLimited, Delay: time.Hour, Reason: delivery.ReasonRateLimited},
		4: errors.New("connection reset"),
		5: delivery.Permanently(errors.New("no such channel")),
		6: errors.New("connection reset"),
	}
	w := delivery.New(delivery.Config[item]{
		Name: "test", Queue: q, Batch: 10, Lease: time.Hour, MaxAttempts: 3,
		Backoff: delivery.Backoff{Base: time.Second, Max: time.Minute},
		Lane:    func(_ context.Context, it item) string { return it.lane },
		Pacer:   delivery.NewPacer(&budget{paused: map[string]time.Time{}}, -1, nil),
		Deliver: func(_ context.Context, it item) (delivery.Done, error) {
			if it.lane == "a" {
				mu.Lock()
				orderA = append(orderA, it.id)
				mu.Unlock()
			}
			return delivery.Done{Note: "sent"}, errs[it.id]
		},
	})
	if n, err := w.RunOnce(context.Background()); err != nil || n != 6 {
		t.Fatalf("RunOnce = %d, %v", n, err)
	}
	if !slices.Equal(orderA, []int{1, 2}) {
		t.Errorf("lane a delivered %v, want 1 then 2 (3 held back by 2's rate limit)", orderA)
	}
	check := func(id int, want delivery.Result, class delivery.Class, attempted bool) delivery.Outcome {
		t.Helper()
		o, ok := q.outcomes[id]
		if !ok {
			t.Fatalf("item %d: no outcome", id)
		}
		if o.Result != want || o.Attempted != attempted || (o.Fail != nil && o.Fail.Class != class) {
			t.Errorf("item %d: outcome %+v (fail %+v), want result %d class %d attempted %v", id, o, o.Fail, want, class, attempted)
		}
		return o
	}
	if o := check(1, delivery.Delivered, 0, false); o.Done.Note != "sent" {
		t.Errorf("item 1's note = %q", o.Done.Note)
	}
	if o := check(2, delivery.Retried, delivery.RateLimited, true); o.Delay != time.Hour {
		t.Errorf("item 2 retried after %v, want the pause", o.Delay)
	}
	if o := check(3, delivery.Retried, delivery.Postponed, false); o.Delay <= 59*time.Minute || o.Fail.Reason != delivery.ReasonPaused {
		t.Errorf("item 3 postponed %v (%q), want until the pause ends", o.Delay, o.Fail.Reason)
	}
	if o := check(4, delivery.Retried, delivery.Transient, true); o.Delay < time.Second/2 || o.Delay > time.Second {
		t.Errorf("item 4's first retry after %v, want half to all of the base", o.Delay)
	}
	check(5, delivery.Failed, delivery.Permanent, true)
	if o := check(6, delivery.Failed, delivery.Transient, true); !o.GaveUp {
		t.Error("item 6 failed on its last attempt without giving up")
	}
}

// A batch worked longer than a third of its lease is renewed, and the
// outcome is recorded on the item as last renewed (its new lease), while
// Deliver saw it as claimed.
func TestWorkerRecordsOnTheRenewedClaim(t *testing.T) {
	t.Parallel()
	q := newQueue(item{id: 1})
	release := make(chan struct{})
	var sent item
	w := delivery.New(delivery.Config[item]{
		Name: "test", Queue: q, Batch: 1, Lease: 30 * time.Millisecond,
		Deliver: func(_ context.Context, it item) (delivery.Done, error) {
			sent = it
			<-release
			return delivery.Done{}, nil
		},
	})
	q.onRenew = func(n int) {
		if n == 2 {
			close(release) // two renewals while the delivery is in flight
		}
	}
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sent.lease != 0 {
		t.Errorf("Deliver saw lease %d, want the claim's (0)", sent.lease)
	}
	if got := q.recorded[1].lease; got < 2 {
		t.Errorf("recorded on lease %d, want the renewed one (2 or more)", got)
	}
}

func TestBackoffDoublesUpToItsCap(t *testing.T) {
	t.Parallel()
	b := delivery.Backoff{Base: 2 * time.Second, Max: 5 * time.Minute}
	for attempt, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 5: 32 * time.Second, 9: 5 * time.Minute, 60: 5 * time.Minute} {
		if d := b.Delay(attempt); d < want/2 || d > want {
			t.Errorf("Delay(%d) = %v, want within [%v, %v]", attempt, d, want/2, want)
		}
	}
}
