package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/countersign/countersign/store"
)

// previewRow is a previews row as read.
type previewRow struct {
	RequestID  string     `db:"request_id"`
	State      string     `db:"state"`
	Changes    []byte     `db:"changes"`
	Summary    string     `db:"summary"`
	Reason     string     `db:"reason"`
	StartedAt  time.Time  `db:"started_at"`
	FinishedAt *time.Time `db:"finished_at"`
}

func (e executor) RequestsByToolEffectString(ctx context.Context, tool, value string, before time.Time, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("requests_by_tool_effect_string"), value, tool, before, limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) PreviewFor(ctx context.Context, requestID string) (store.Preview, error) {
	rows, err := e.db.Query(ctx, q.Get("preview_for"), requestID)
	r, err := one[previewRow]("reading preview", rows, err)
	if err != nil {
		return store.Preview{}, err
	}
	p := store.Preview{RequestID: r.RequestID, State: store.PreviewState(r.State), Summary: r.Summary, Reason: r.Reason,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	if err := json.Unmarshal(r.Changes, &p.Changes); err != nil {
		return store.Preview{}, err
	}
	if len(p.Changes) == 0 {
		p.Changes = nil
	}
	return p, nil
}

func (e executor) ClaimPreview(ctx context.Context, p store.ClaimPreviewParams) (bool, error) {
	return e.exists(ctx, "claiming preview", q.Get("claim_preview"), p.RequestID, string(p.Fetching), p.Now, p.StaleBefore)
}

func (e executor) RecordPreview(ctx context.Context, p store.RecordPreviewParams) (bool, error) {
	changes, err := p.ChangesJSON()
	if err != nil {
		return false, err
	}
	return e.exists(ctx, "recording preview", q.Get("record_preview"), p.RequestID, string(p.State), changes,
		p.Summary, p.Reason, p.FinishedAt, string(p.Fetching))
}
