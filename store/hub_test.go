package store_test

import (
	"testing"

	"github.com/countersign/countersign/store"
)

// OnChange calls its function on a change to its request and on a
// broadcast, not on another request's change, and never after cancel; the
// channel subscribers beside it are woken as before.
func TestHubOnChange(t *testing.T) {
	h := store.NewHub()
	var calls int
	cancel := h.OnChange("a", func() { calls++ })
	ch, stop := h.SubscribeChange("a")
	defer stop()
	if got := h.Waiting("a"); got != 2 {
		t.Fatalf("Waiting = %d, want 2", got)
	}
	h.NotifyChange("b")
	if calls != 0 {
		t.Fatalf("another request's change called the function %d times", calls)
	}
	h.NotifyChange("a")
	if calls != 1 {
		t.Fatalf("a change called it %d times, want 1", calls)
	}
	select {
	case <-ch:
	default:
		t.Fatal("the channel subscriber was not signalled")
	}
	h.Broadcast()
	if calls != 2 {
		t.Fatalf("a broadcast called it %d times in all, want 2", calls)
	}
	cancel()
	h.NotifyChange("a")
	h.Broadcast()
	if calls != 2 || h.Waiting("a") != 1 {
		t.Fatalf("after cancel: %d calls, %d waiting; want 2 and 1", calls, h.Waiting("a"))
	}
}
