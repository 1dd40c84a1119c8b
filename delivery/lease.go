package delivery

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// held renews the leases of a claimed batch until each item is finished:
// the lease is short, so a dead replica's items come back within seconds,
// and renewing keeps a live replica's items from being claimed again while
// they wait behind their lane's pacing or a slow call.
type held[T any] struct {
	renewing sync.Mutex // held across a renewal, so finish sees its result
	mu       sync.Mutex
	items    []T    // as last renewed
	open     []bool // still being worked
	stop     chan struct{}
	done     chan struct{}
}

// hold renews items' leases every third of lease until release.
func (w *Worker[T]) hold(ctx context.Context, items []T) *held[T] {
	h := &held[T]{items: slices.Clone(items), open: make([]bool, len(items)), stop: make(chan struct{}), done: make(chan struct{})}
	for i := range h.open {
		h.open[i] = true
	}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(w.cfg.Lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			w.renew(ctx, h)
		}
	}()
	return h
}

// renew renews the items still open, in one call.
func (w *Worker[T]) renew(ctx context.Context, h *held[T]) {
	h.renewing.Lock()
	defer h.renewing.Unlock()
	var idx []int
	var items []T
	h.mu.Lock()
	for i, open := range h.open {
		if open {
			idx = append(idx, i)
			items = append(items, h.items[i])
		}
	}
	h.mu.Unlock()
	if len(items) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Lease/3)
	defer cancel()
	renewed, err := w.cfg.Queue.Renew(ctx, items, w.cfg.Lease)
	if err != nil {
		if ctx.Err() == nil {
			w.cfg.Logger.Warn("renewing "+w.cfg.Name+" claims failed; another replica may take them when their lease runs out",
				slog.String("error", err.Error()))
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for j, i := range idx {
		if j < len(renewed) {
			h.items[i] = renewed[j]
		}
	}
}

// finish stops renewing item i and returns it as last renewed, after a
// renewal in flight.
func (h *held[T]) finish(i int) T {
	h.renewing.Lock()
	defer h.renewing.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open[i] = false
	return h.items[i]
}

// release stops renewing and waits for a renewal in flight.
func (h *held[T]) release() {
	close(h.stop)
	<-h.done
}
