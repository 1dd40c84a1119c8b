package embedded

import (
	"context"

	"github.com/countersign/countersign/store"
)

func (e executor) CountSurfaceAttempt(ctx context.Context, a store.SurfaceAttempt) (int, error) {
	if err := e.tx.exec(ctx, "deleting expired surface attempts", q.Get("delete_expired_surface_attempts"), micros(e.tx.now)); err != nil {
		return 0, err
	}
	var n int
	err := e.tx.QueryRowContext(ctx, q.Get("count_surface_attempt"), a.Surface, a.Key, micros(a.Expires)).Scan(&n)
	return n, wrap("counting a surface attempt", err)
}

func (e executor) SurfaceAttempts(ctx context.Context, surface, key string) (int, error) {
	var n int
	err := e.read().QueryRowContext(ctx, q.Get("surface_attempts"), surface, key).Scan(&n)
	return n, wrap("reading surface attempts", err)
}
