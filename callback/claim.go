package callback

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/countersign/countersign/store"
)

// ClaimLease is how long a claimed delivery is left to its replica. It is
// short so that a dead replica's deliveries are sent by another within 10 s
// (the lease and a poll); a live replica renews it every third of it while
// the POST is in flight.
const ClaimLease = 8 * time.Second

// holdClaim renews claimed's lease until the returned stop is called, and
// keeps claimed up to date with each renewal (the renewed lease identifies
// the attempt). claimed must not be read until stop has returned.
func (d *Deliverer) holdClaim(ctx context.Context, claimed *store.Callback, logger *slog.Logger) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(d.lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			renew, cancel := context.WithTimeout(ctx, d.lease/3)
			renewed, err := d.cfg.DB.RenewCallback(renew, *claimed, d.lease)
			cancel()
			switch {
			case errors.Is(err, store.ErrNotFound):
				return // a redrive took the row over; the outcome will say so
			case err != nil:
				if ctx.Err() == nil {
					logger.Warn("renewing a callback claim failed; another replica may send it when its lease runs out",
						slog.String("error", err.Error()))
				}
			default:
				*claimed = renewed
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}
