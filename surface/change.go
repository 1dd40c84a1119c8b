package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/misleading"
	"github.com/countersign/countersign/store"
)

// Change is what a surface shows of a request's write as a change.
type Change struct {
	// Wanted: the request has (or its tool asks) a preview.
	Wanted bool
	// Unavailable: the preview failed, or did not come in time; Reason
	// says why when it failed.
	Unavailable bool
	Reason      string
	Lines       []ChangeLine
	Summary     string
	// Findings flag the preview's text that can mislead a reviewer, as
	// an effect's are (internal/misleading).
	Findings []misleading.Finding
}

// ChangeLine is one field before and after, as text.
type ChangeLine struct{ Field, Before, After string }

// Change returns what v shows of its write as a change: its preview's
// lines or summary, or that it is unavailable. Not Wanted when the request
// has no preview and its tool asks none.
func (v View) Change() Change {
	p := v.Preview
	if p == nil {
		if v.Tool.Preview == nil {
			return Change{}
		}
		return Change{Wanted: true, Unavailable: true}
	}
	c := Change{Wanted: true}
	if p.State != store.PreviewReady {
		c.Unavailable, c.Reason = true, p.Reason
		return c
	}
	c.Summary = p.Summary
	for _, ch := range p.Changes {
		c.Lines = append(c.Lines, ChangeLine{Field: ch.Field, Before: ValueText(ch.Before), After: ValueText(ch.After)})
	}
	c.Findings = PreviewFindings(*p)
	return c
}

// ValueText is a JSON value as a reviewer reads it: a string bare, null
// (absent) as "(none)", anything else as compact JSON.
func ValueText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "(none)"
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(compact(raw))
}

// PreviewFindings flags the text of a preview that can mislead a
// reviewer: bidirectional controls, invisible characters, mixed scripts,
// at pointers into {"changes": [...], "summary": "..."}.
func PreviewFindings(p store.Preview) []misleading.Finding {
	doc, err := json.Marshal(struct {
		Changes []store.PreviewChange `json:"changes,omitempty"`
		Summary string                `json:"summary,omitempty"`
	}{p.Changes, p.Summary})
	if err != nil {
		return nil
	}
	found := misleading.Find(doc)
	for i := range found {
		found[i].Pointer = "preview" + found[i].Pointer
	}
	return found
}

// Text of a preview on a surface that shows one line per change.
func (l ChangeLine) String() string {
	return l.Field + ": " + l.Before + " → " + l.After
}

// Unavailability is the words a card uses for a preview it cannot show.
const Unavailability = "preview unavailable"

// PreviewReader reads a request's stored preview (store.Store does).
type PreviewReader interface {
	PreviewFor(ctx context.Context, requestID string) (store.Preview, error)
}

// PageChange is what a review page shows of req's write as a change: its
// stored preview, or, when no card surface has asked (or one is still
// asking) and ps is set, the answer ps asks or waits for as a card would,
// at most the tool's timeout.
func PageChange(ctx context.Context, db PreviewReader, ps *Previewer, req store.Request, tool approvals.Tool) (Change, error) {
	v := View{Request: req, Tool: tool}
	p, err := db.PreviewFor(ctx, req.ID)
	switch {
	case err == nil:
		v.Preview = &p
	case !errors.Is(err, store.ErrNotFound):
		return Change{}, err
	}
	if (v.Preview == nil || v.Preview.State == store.PreviewFetching) && ps != nil && tool.Preview != nil {
		v.Preview = ps.Await(ctx, v)
	}
	return v.Change(), nil
}
