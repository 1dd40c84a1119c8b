package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertGrant(ctx context.Context, g store.Grant) error {
	match, err := json.Marshal(g.Match)
	if err != nil {
		return err
	}
	_, err = e.db.Exec(ctx, q.Get("insert_grant"), g.ID, g.Tool, g.Agent, g.Grantor, g.RequestID, g.Round,
		string(match), g.AmountField, g.AmountCeiling, g.CreatedAt, g.ExpiresAt)
	return wrap("recording grant", err)
}

func (e executor) GrantByID(ctx context.Context, id string) (store.Grant, error) {
	rows, err := e.db.Query(ctx, q.Get("grant_by_id"), id)
	return one[store.Grant]("reading grant", rows, err)
}

func (e executor) LiveGrants(ctx context.Context, tool, agent string, at time.Time) ([]store.Grant, error) {
	rows, err := e.db.Query(ctx, q.Get("live_grants"), tool, agent, at)
	return collect[store.Grant]("reading live grants", rows, err)
}

func (e executor) ListGrants(ctx context.Context, p store.ListGrantsParams) ([]store.Grant, error) {
	rows, err := e.db.Query(ctx, q.Get("list_grants"), p.Grantor, p.LiveAt, p.Limit)
	return collect[store.Grant]("listing grants", rows, err)
}

func (e executor) RevokeGrant(ctx context.Context, p store.RevokeGrantParams) (store.Grant, bool, error) {
	rows, err := e.db.Query(ctx, q.Get("revoke_grant"), p.ID, p.By, p.Now, p.Grantor)
	return first(collect[store.Grant]("revoking grant", rows, err))
}

func (e executor) HoldGrant(ctx context.Context, id string, now *time.Time) (bool, error) {
	return e.exists(ctx, "holding grant", q.Get("hold_grant"), id, now)
}
