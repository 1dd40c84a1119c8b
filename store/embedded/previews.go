package embedded

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) RequestsByToolEffectString(ctx context.Context, tool, value string, before time.Time, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("requests_by_tool_effect_string"), value, tool, micros(before), limit)
}

func (e executor) PreviewFor(ctx context.Context, requestID string) (store.Preview, error) {
	var p store.Preview
	p, err := scanInto("reading preview", e.read().QueryRowContext(ctx, q.Get("preview_for"), canonicalID(requestID)), &p,
		&p.RequestID, &p.State, jsonText{&p.Changes}, &p.Summary, &p.Reason, at{t: &p.StartedAt}, at{ptr: &p.FinishedAt})
	if len(p.Changes) == 0 {
		p.Changes = nil
	}
	return p, err
}

func (e executor) ClaimPreview(ctx context.Context, p store.ClaimPreviewParams) (bool, error) {
	var one int
	err := e.tx.QueryRowContext(ctx, q.Get("claim_preview"), canonicalID(p.RequestID), string(p.Fetching),
		micros(e.tx.clock(p.Now)), micros(p.StaleBefore)).Scan(&one)
	return found("claiming preview", err)
}

func (e executor) RecordPreview(ctx context.Context, p store.RecordPreviewParams) (bool, error) {
	changes, err := p.ChangesJSON()
	if err != nil {
		return false, err
	}
	var one int
	err = e.tx.QueryRowContext(ctx, q.Get("record_preview"), canonicalID(p.RequestID), string(p.State), changes,
		p.Summary, p.Reason, micros(e.tx.clock(p.FinishedAt)), string(p.Fetching)).Scan(&one)
	return found("recording preview", err)
}
