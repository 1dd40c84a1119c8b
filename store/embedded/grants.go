package embedded

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/store"
)

func scanGrant(row scanner) (store.Grant, error) {
	var g store.Grant
	return scanInto("reading grant", row, &g, &g.ID, &g.Tool, &g.Agent, &g.Grantor, &g.RequestID, &g.Round,
		jsonText{&g.Match}, &g.AmountField, &g.AmountCeiling, at{t: &g.CreatedAt}, at{t: &g.ExpiresAt},
		at{ptr: &g.RevokedAt}, &g.RevokedBy)
}

func (e executor) InsertGrant(ctx context.Context, g store.Grant) error {
	match, err := json.Marshal(g.Match)
	if err != nil {
		return err
	}
	return e.tx.exec(ctx, "recording grant", q.Get("insert_grant"), g.ID, g.Tool, g.Agent, g.Grantor,
		canonicalID(g.RequestID), g.Round, string(match), g.AmountField, g.AmountCeiling,
		micros(g.CreatedAt), micros(g.ExpiresAt))
}

func (e executor) GrantByID(ctx context.Context, id string) (store.Grant, error) {
	return scanGrant(e.read().QueryRowContext(ctx, q.Get("grant_by_id"), id))
}

func (e executor) LiveGrants(ctx context.Context, tool, agent string, at time.Time) ([]store.Grant, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("live_grants"), tool, agent, micros(at))
	return collect("reading live grants", scanGrant, rows, err)
}

func (e executor) ListGrants(ctx context.Context, p store.ListGrantsParams) ([]store.Grant, error) {
	var liveAt any
	if p.LiveAt != nil {
		liveAt = micros(*p.LiveAt)
	}
	rows, err := e.read().QueryContext(ctx, q.Get("list_grants"), p.Grantor, liveAt, p.Limit)
	return collect("listing grants", scanGrant, rows, err)
}

func (e executor) RevokeGrant(ctx context.Context, p store.RevokeGrantParams) (store.Grant, bool, error) {
	g, err := scanGrant(e.tx.QueryRowContext(ctx, q.Get("revoke_grant"), p.ID, p.By, micros(e.tx.clock(p.Now)), p.Grantor))
	ok, err := found("revoking grant", err)
	return g, ok, err
}

func (e executor) HoldGrant(ctx context.Context, id string, now *time.Time) (bool, error) {
	var one int
	err := e.tx.QueryRowContext(ctx, q.Get("hold_grant"), id, micros(e.tx.clock(now))).Scan(&one)
	return found("holding grant", err)
}
