package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/store"
)

// heldClaims renews the leases of claimed outbox rows until each is
// finished: the lease is short, so a dead replica's rows come back within
// seconds, and renewing keeps a live replica's rows from being claimed
// again while they wait behind the channel's pacing or a slow Slack call.
type heldClaims struct {
	mu   sync.Mutex
	open map[int64]bool
	stop chan struct{}
	done chan struct{}
}

// holdClaims renews rows' leases every third of lease until release.
func (b *Bot) holdClaims(ctx context.Context, rows []store.OutboxRow) *heldClaims {
	h := &heldClaims{open: make(map[int64]bool, len(rows)), stop: make(chan struct{}), done: make(chan struct{})}
	for _, row := range rows {
		h.open[row.ID] = true
	}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(b.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			renew, cancel := context.WithTimeout(ctx, b.lease/3)
			if err := b.db.RenewOutbox(renew, h.ids(), b.lease); err != nil && ctx.Err() == nil {
				b.logger.Warn("renewing outbox claims failed; another replica may take them when their lease runs out",
					slog.String("error", err.Error()))
			}
			cancel()
		}
	}()
	return h
}

// finished stops renewing row id.
func (h *heldClaims) finished(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.open, id)
}

func (h *heldClaims) ids() []int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]int64, 0, len(h.open))
	for id := range h.open {
		ids = append(ids, id)
	}
	return ids
}

// release stops renewing and waits for a renewal in flight.
func (h *heldClaims) release() {
	close(h.stop)
	<-h.done
}
