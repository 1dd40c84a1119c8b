package hook

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/wire"
)

// A page of GET /v1/requests holds DefaultListLimit requests unless its
// limit asks for 1 to MaxListLimit.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// list answers GET /v1/requests: a page of the requests the agent may see
// (an admin: every agent's) that match the query's filters.
func (h *Handler) list(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	p, err := parseListQuery(r.URL.RawQuery)
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(err))
	}
	limit := p.Limit
	p.Limit++ // one request past the page says whether another page follows
	reqs, err := h.svc.List(r.Context(), agent, p)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	page := wire.RequestPage{Data: []wire.Request{}}
	if len(reqs) > limit {
		next, err := encodeCursor(store.PositionOf(reqs[limit-1]))
		if err != nil {
			return h.writeServiceError(w, r, err)
		}
		page.NextCursor = &next
		reqs = reqs[:limit]
	}
	if page.Data, err = h.pageViews(r.Context(), reqs); err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, page)
}

// pageViews returns the representations of reqs, in their order, with
// the parts of those that have any read at once (one round trip on
// PostgreSQL, none for a page of new requests).
func (h *Handler) pageViews(ctx context.Context, reqs []store.Request) ([]wire.Request, error) {
	var withParts []store.Request
	for _, req := range reqs {
		if hasParts(req) {
			withParts = append(withParts, req)
		}
	}
	parts, err := h.svc.DB.PartsOf(ctx, withParts)
	if err != nil {
		return nil, err
	}
	views := make([]wire.Request, len(reqs))
	for i, req := range reqs {
		var p store.RequestParts
		if hasParts(req) {
			p, parts = parts[0], parts[1:]
		}
		views[i] = viewFrom(h.svc, req, p)
	}
	return views, nil
}

// listParameters are the query parameters of GET /v1/requests.
var listParameters = []string{"status", "tool", "run_id", "settled", "limit", "cursor"}

// parseListQuery reads the query of GET /v1/requests. Each parameter may be
// given once, with a value. Any other parameter is refused, as Stripe's
// lists do, rather than ignored: a misspelt filter (state=pending) would
// otherwise list everything and look like an answer. The values a store
// holds (status, tool, run_id) are checked by approvals.Service.List.
func parseListQuery(raw string) (store.ListRequestsParams, error) {
	p := store.ListRequestsParams{Limit: DefaultListLimit}
	given := map[string]bool{}
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		rawName, rawValue, _ := strings.Cut(part, "=")
		name, err := url.QueryUnescape(rawName)
		if err != nil {
			return p, invalid(rawName, "%.64q is not a parameter name: %v", rawName, err)
		}
		if !slices.Contains(listParameters, name) {
			return p, invalid(name, "%.64q is not a parameter of this list, which takes status, tool, run_id, settled, limit and cursor", name)
		}
		if given[name] {
			return p, invalid(name, "%s is given more than once", name)
		}
		given[name] = true
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return p, invalid(name, "%s is not a valid query value: %v", name, err)
		}
		if value == "" {
			return p, invalid(name, "%s is empty: give it a value, or leave it out", name)
		}
		switch name {
		case "status":
			p.Status = store.RequestStatus(value)
		case "tool":
			p.Tool = value
		case "run_id":
			p.RunID = value
		case "settled":
			if value != "true" && value != "false" {
				return p, invalid(name, "settled must be true or false")
			}
			p.Settled = new(value == "true")
		case "limit":
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 || n > MaxListLimit {
				return p, invalid(name, "limit must be a whole number from 1 to %d", MaxListLimit)
			}
			p.Limit = n
		case "cursor":
			after, err := decodeCursor(value)
			if err != nil {
				return p, invalid(name, "%v", err)
			}
			p.After = &after
		}
	}
	return p, nil
}
