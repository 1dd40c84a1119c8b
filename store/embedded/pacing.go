package embedded

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) TakePostSlot(ctx context.Context, lane store.Lane, interval time.Duration) (time.Duration, error) {
	var us int64
	err := e.tx.QueryRowContext(ctx, q.Get("take_post_slot"), micros(e.tx.now), lane.Surface, interval.Microseconds(),
		lane.Destination).Scan(&us)
	return max(time.Duration(us)*time.Microsecond, 0), wrap("taking a post slot", err)
}

func (e executor) PauseLane(ctx context.Context, lane store.Lane, d time.Duration) error {
	return e.tx.exec(ctx, "pausing a lane", q.Get("pause_lane"), micros(e.tx.now), lane.Surface, d.Microseconds(), lane.Destination)
}

func (e executor) LanePause(ctx context.Context, lane store.Lane) (time.Duration, error) {
	var us int64
	err := e.tx.QueryRowContext(ctx, q.Get("lane_pause"), micros(e.tx.now), lane.Surface, lane.Destination).Scan(&us)
	return time.Duration(us) * time.Microsecond, wrap("reading a lane's pause", err)
}
