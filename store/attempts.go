package store

import (
	"context"
	"time"
)

// SurfaceAttempt names something a review surface hands out whose failed
// attempts every replica counts (an email link's wrong addresses): the
// surface, a digest of the thing (never a secret itself), and when the
// thing expires, after which its count is deleted.
type SurfaceAttempt struct {
	Surface string
	Key     string
	Expires time.Time
}

// CountSurfaceAttempt records one failed attempt at a and returns the
// count so far, this one included, as every replica sees it. Counts of
// things past their expiry are deleted on the way.
func (l *Ledger) CountSurfaceAttempt(ctx context.Context, a SurfaceAttempt) (int, error) {
	return alone(ctx, l, func(ex Executor) (int, error) { return ex.CountSurfaceAttempt(ctx, a) })
}

// SurfaceAttempts is the count of failed attempts at the thing surface
// and key name; zero when none was counted.
func (l *Ledger) SurfaceAttempts(ctx context.Context, surface, key string) (int, error) {
	return alone(ctx, l, func(ex Executor) (int, error) { return ex.SurfaceAttempts(ctx, surface, key) })
}
