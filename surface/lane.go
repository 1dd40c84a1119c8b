package surface

import (
	"context"
	"strings"
	"time"

	"github.com/countersign/countersign/store"
)

// laneName is a lane as the delivery worker and its Pacer name it:
// "surface/destination". A surface's name has no "/".
func laneName(l store.Lane) string { return l.Surface + "/" + l.Destination }

func laneOf(name string) store.Lane {
	s, d, _ := strings.Cut(name, "/")
	return store.Lane{Surface: s, Destination: d}
}

// budget is the ledger's shared pacing as the Pacer's Budget.
type budget struct{ db Ledger }

func (p budget) TakeSlot(ctx context.Context, lane string, interval time.Duration) (time.Duration, error) {
	return p.db.TakePostSlot(ctx, laneOf(lane), interval)
}

func (p budget) Pause(ctx context.Context, lane string, d time.Duration) error {
	return p.db.PauseLane(ctx, laneOf(lane), d)
}

func (p budget) PauseLeft(ctx context.Context, lane string) (time.Duration, error) {
	return p.db.LanePause(ctx, laneOf(lane))
}
