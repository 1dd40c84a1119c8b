package inbox

import (
	"context"
	"errors"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// change reads what a request's page shows of its write as a change: its
// tool's preview, field by field or a summary, or that it is unavailable;
// nil when the request has no preview and its tool asks none.
func (h *Handler) change(ctx context.Context, req store.Request) (*surface.Change, error) {
	tool, _ := h.svc.Tool(req.Tool)
	v := surface.View{Request: req, Tool: tool}
	p, err := h.db.PreviewFor(ctx, req.ID)
	switch {
	case err == nil:
		v.Preview = &p
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	if (v.Preview == nil || v.Preview.State == store.PreviewFetching) && h.previews != nil && tool.Preview != nil {
		v.Preview = h.previews.Await(ctx, v) // no card surface asked: ask as a card would
	}
	c := v.Change()
	if !c.Wanted {
		return nil, nil
	}
	return &c, nil
}
