package inbox

import (
	"context"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// change reads what a request's page shows of its write as a change: its
// tool's preview, field by field or a summary, or that it is unavailable;
// nil when the request has no preview and its tool asks none.
func (h *Handler) change(ctx context.Context, req store.Request) (*surface.Change, error) {
	tool, _ := h.svc.Tool(req.Tool)
	c, err := surface.PageChange(ctx, h.db, h.previews, req, tool)
	if err != nil || !c.Wanted {
		return nil, err
	}
	return &c, nil
}
