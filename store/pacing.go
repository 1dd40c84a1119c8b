package store

import (
	"context"
	"time"
)

// Lane is one place a review surface posts to (a Slack channel): posts to
// a lane are paced together, and a rate limit pauses the lane.
type Lane struct {
	Surface     string
	Destination string
}

// TakePostSlot takes the next slot for a post to lane, shared by every
// replica: slots are interval apart, and none comes before a pause of the
// lane ends. It returns how long from now until the slot comes; the
// caller waits that long, then posts.
func (l *Ledger) TakePostSlot(ctx context.Context, lane Lane, interval time.Duration) (time.Duration, error) {
	return alone(ctx, l, func(ex Executor) (time.Duration, error) { return ex.TakePostSlot(ctx, lane, interval) })
}

// PauseLane pauses every replica's posts to lane for at least d: a rate
// limit (Slack's 429 and its Retry-After) speaks for the whole
// workspace's budget, not one process's.
func (l *Ledger) PauseLane(ctx context.Context, lane Lane, d time.Duration) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.PauseLane(ctx, lane, d) })
}

// LanePause is how long lane's pause still runs; zero when it is not
// paused.
func (l *Ledger) LanePause(ctx context.Context, lane Lane) (time.Duration, error) {
	return alone(ctx, l, func(ex Executor) (time.Duration, error) { return ex.LanePause(ctx, lane) })
}
