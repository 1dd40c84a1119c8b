package postgres

import (
	"context"
	"time"
)

func (e executor) TakePostSlot(ctx context.Context, channel string, interval time.Duration) (time.Duration, error) {
	var us int64
	err := e.db.QueryRow(ctx, q.Get("take_post_slot"), channel, interval.Microseconds()).Scan(&us)
	return max(time.Duration(us)*time.Microsecond, 0), wrap("taking a post slot", err)
}

func (e executor) PauseChannel(ctx context.Context, channel string, d time.Duration) error {
	_, err := e.db.Exec(ctx, q.Get("pause_channel"), channel, d.Microseconds())
	return wrap("pausing a channel", err)
}

func (e executor) ChannelPause(ctx context.Context, channel string) (time.Duration, error) {
	var us int64
	err := e.db.QueryRow(ctx, q.Get("channel_pause"), channel).Scan(&us)
	return time.Duration(us) * time.Microsecond, wrap("reading a channel's pause", err)
}
