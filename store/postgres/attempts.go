package postgres

import (
	"context"

	"github.com/countersign/countersign/store"
)

func (e executor) CountSurfaceAttempt(ctx context.Context, a store.SurfaceAttempt) (int, error) {
	if _, err := e.db.Exec(ctx, q.Get("delete_expired_surface_attempts")); err != nil {
		return 0, wrap("deleting expired surface attempts", err)
	}
	var n int
	err := e.db.QueryRow(ctx, q.Get("count_surface_attempt"), a.Surface, a.Key, a.Expires).Scan(&n)
	return n, wrap("counting a surface attempt", err)
}

func (e executor) SurfaceAttempts(ctx context.Context, surface, key string) (int, error) {
	var n int
	err := e.db.QueryRow(ctx, q.Get("surface_attempts"), surface, key).Scan(&n)
	return n, wrap("reading surface attempts", err)
}
