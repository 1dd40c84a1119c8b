package store

import (
	"context"
	"time"
)

// TakePostSlot takes the next slot for a post to channel, shared by every
// replica: slots are interval apart, and none comes before a pause of the
// channel ends. It returns how long from now until the slot comes; the
// caller waits that long, then posts.
func (l *Ledger) TakePostSlot(ctx context.Context, channel string, interval time.Duration) (time.Duration, error) {
	return alone(ctx, l, func(ex Executor) (time.Duration, error) { return ex.TakePostSlot(ctx, channel, interval) })
}

// PauseChannel pauses every replica's posts to channel for at least d: a
// 429's Retry-After speaks for the whole workspace's budget, not one
// process's.
func (l *Ledger) PauseChannel(ctx context.Context, channel string, d time.Duration) error {
	return l.driver.Write(ctx, func(ex Executor) error { return ex.PauseChannel(ctx, channel, d) })
}

// ChannelPause is how long channel's pause still runs; zero when it is not
// paused.
func (l *Ledger) ChannelPause(ctx context.Context, channel string) (time.Duration, error) {
	return alone(ctx, l, func(ex Executor) (time.Duration, error) { return ex.ChannelPause(ctx, channel) })
}
