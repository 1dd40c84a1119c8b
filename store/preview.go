package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// PreviewState is where a request's preview stands; the values equal the
// SQL values.
type PreviewState string

// A preview is fetching while one worker asks the tool's preview endpoint,
// then ready (Changes or Summary) or failed (Reason).
const (
	PreviewFetching PreviewState = "fetching"
	PreviewReady    PreviewState = "ready"
	PreviewFailed   PreviewState = "failed"
)

// PreviewChange is one field a write changes, as the tool's preview
// endpoint said: its value before and after, each any JSON value (null
// when the field is absent on that side).
type PreviewChange struct {
	Field  string          `json:"field"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// Preview is what a request's write changes, asked of its tool's preview
// endpoint once before its first card is posted: field by field
// (Changes) or in the provider's own words (Summary). A failed preview
// keeps why (Reason) and the cards say the preview is unavailable.
type Preview struct {
	RequestID  string
	State      PreviewState
	Changes    []PreviewChange
	Summary    string
	Reason     string
	StartedAt  time.Time
	FinishedAt *time.Time
}

// ClaimPreviewParams claims the fetch of a request's preview: a request
// with no preview gets one fetching since Now (nil: the database clock);
// one still fetching since before StaleBefore (its fetcher died or is past
// its timeout) is taken over, so at most one fetch is live per request.
type ClaimPreviewParams struct {
	RequestID   string
	Now         *time.Time
	StaleBefore time.Time
	// Fetching is the state a claimed preview is in (PreviewFetching):
	// the rule is the core's, the driver only writes it.
	Fetching PreviewState
}

// RecordPreviewParams is the outcome of a claimed fetch: State is
// PreviewReady or PreviewFailed. It is recorded only while the preview is
// still Fetching: the first outcome wins.
type RecordPreviewParams struct {
	Preview
	Fetching PreviewState
}

// ChangesJSON is Changes as both stores keep them: JSON text, or nil when
// the preview has none.
func (p RecordPreviewParams) ChangesJSON() (any, error) {
	if p.Changes == nil {
		return nil, nil
	}
	b, err := json.Marshal(p.Changes)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// maxPreviewCandidates bounds the requests of a tool sharing a business
// id value that PreviousByBusinessID reads to find one with the value in
// the business id's field.
const maxPreviewCandidates = 20

// PreviousByBusinessID returns the latest request of tool created before
// before whose effect holds value, a string, in its top-level field: the
// write a reviewer compares a request without a preview to. It reads the
// effect strings' index (RequestsByToolEffectString), at most 20 requests
// of the tool holding value anywhere, newest first, and keeps the first
// holding it in field. ErrNotFound when there is none.
func PreviousByBusinessID(ctx context.Context, r Reader, tool, field, value string, before time.Time) (Request, error) {
	if field == "" || value == "" || holdsNUL(value) {
		return Request{}, ErrNotFound
	}
	reqs, err := r.RequestsByToolEffectString(ctx, tool, value, before, maxPreviewCandidates)
	if err != nil {
		return Request{}, err
	}
	for _, req := range reqs {
		if v, ok := BusinessIDOf(req.Snapshot, field); ok && v == value {
			return req, nil
		}
	}
	return Request{}, ErrNotFound
}

// BusinessIDOf returns the string at the top-level field of an effect
// (a JSON object); ok false when the effect has none there or it is not
// a string.
func BusinessIDOf(effect []byte, field string) (string, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(effect, &obj); err != nil {
		return "", false
	}
	raw, ok := obj[field]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", false
	}
	return s, true
}

// ClaimPreview claims the fetch of a request's preview (see
// ClaimPreviewParams): claimed false when another worker's fetch is live
// or the preview is done, which PreviewFor then reads.
func (l *Ledger) ClaimPreview(ctx context.Context, p ClaimPreviewParams) (claimed bool, err error) {
	p.Fetching = PreviewFetching
	return alone(ctx, l, func(ex Executor) (bool, error) { return ex.ClaimPreview(ctx, p) })
}

// RecordPreview records the outcome of a claimed fetch, unless another
// outcome was recorded first; recorded false then.
func (l *Ledger) RecordPreview(ctx context.Context, p Preview) (recorded bool, err error) {
	switch p.State {
	case PreviewReady, PreviewFailed:
	default:
		return false, errors.New("recording a preview: its state must be ready or failed")
	}
	return alone(ctx, l, func(ex Executor) (bool, error) {
		return ex.RecordPreview(ctx, RecordPreviewParams{Preview: p, Fetching: PreviewFetching})
	})
}
