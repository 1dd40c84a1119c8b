package embedded

import (
	"context"
	"time"
)

func (e executor) TakePostSlot(ctx context.Context, channel string, interval time.Duration) (time.Duration, error) {
	var us int64
	err := e.tx.QueryRowContext(ctx, q.Get("take_post_slot"), micros(e.tx.now), channel, interval.Microseconds()).Scan(&us)
	return max(time.Duration(us)*time.Microsecond, 0), wrap("taking a post slot", err)
}

func (e executor) PauseChannel(ctx context.Context, channel string, d time.Duration) error {
	return e.tx.exec(ctx, "pausing a channel", q.Get("pause_channel"), micros(e.tx.now), channel, d.Microseconds())
}

func (e executor) ChannelPause(ctx context.Context, channel string) (time.Duration, error) {
	var us int64
	err := e.tx.QueryRowContext(ctx, q.Get("channel_pause"), micros(e.tx.now), channel).Scan(&us)
	return time.Duration(us) * time.Microsecond, wrap("reading a channel's pause", err)
}
