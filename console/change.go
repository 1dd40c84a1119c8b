package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/countersign/countersign/internal/misleading"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// changeView is what a request page shows of the write as a change: its
// preview (surface.Change: field by field, a summary, or unavailable),
// and, without a preview that came, the difference from the latest earlier
// request of the same tool with the same business id (Previous).
type changeView struct {
	surface.Change
	Previous *previousChange
	// BusinessID is the tool's business id field and this request's value
	// there, when both are set.
	BusinessID, Value string
}

// previousChange is the difference of a request's effect from an earlier
// request's, field by field (dotted paths into objects; a list is one
// value).
type previousChange struct {
	Request store.Request
	Lines   []surface.ChangeLine
	// Findings flag the earlier effect's text as the effect's are.
	Findings []misleading.Finding
}

// maxDiffLines bounds the fields a difference lists.
const maxDiffLines = 200

// change reads what the request page shows of the write as a change; nil
// when there is nothing to show (no preview asked, no business id).
func (h *Handler) change(ctx context.Context, req store.Request, user string) (*changeView, error) {
	tool, _ := h.svc.Tool(req.Tool)
	pc, err := surface.PageChange(ctx, h.db, h.opts.Previews, req, tool)
	if err != nil {
		return nil, err
	}
	c := &changeView{Change: pc}
	if c.Wanted && !c.Unavailable {
		return c, nil
	}
	if tool.BusinessID != "" {
		value, ok := store.BusinessIDOf(req.Snapshot, tool.BusinessID)
		if ok {
			c.BusinessID, c.Value = tool.BusinessID, value
			prev, err := store.PreviousByBusinessID(ctx, h.db, req.Tool, tool.BusinessID, value, req.CreatedAt)
			switch {
			case err == nil:
				// An earlier request is shown only to who may see it.
				if mine, err := h.mayReview(ctx, prev, user); err != nil {
					return nil, err
				} else if mine {
					c.Previous = &previousChange{Request: prev, Lines: effectDiff(prev.Snapshot, req.Snapshot),
						Findings: prefixed("previous", misleading.Find(prev.Snapshot))}
				}
			case !errors.Is(err, store.ErrNotFound):
				return nil, err
			}
		}
	}
	if !c.Wanted && c.BusinessID == "" {
		return nil, nil
	}
	return c, nil
}

func prefixed(prefix string, found []misleading.Finding) []misleading.Finding {
	for i := range found {
		found[i].Pointer = prefix + found[i].Pointer
	}
	return found
}

// effectDiff lists the fields whose values differ between two effects,
// by dotted path, in path order; a field one of them lacks is "(none)"
// there.
func effectDiff(before, after []byte) []surface.ChangeLine {
	b, a := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	flatten("", before, b)
	flatten("", after, a)
	paths := make([]string, 0, len(a)+len(b))
	for p := range b {
		paths = append(paths, p)
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out []surface.ChangeLine
	for _, p := range paths {
		if bytes.Equal(canonical(b[p]), canonical(a[p])) {
			continue
		}
		out = append(out, surface.ChangeLine{Field: p, Before: surface.ValueText(b[p]), After: surface.ValueText(a[p])})
		if len(out) == maxDiffLines {
			break
		}
	}
	return out
}

// flatten puts each leaf of doc (an object's members, at any depth) in
// out by dotted path; a list, a scalar or an empty object is a leaf.
func flatten(path string, doc json.RawMessage, out map[string]json.RawMessage) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil || len(obj) == 0 {
		if path != "" {
			out[path] = doc
		}
		return
	}
	for k, v := range obj {
		if path != "" {
			k = path + "." + k
		}
		flatten(k, v, out)
	}
}

// canonical is a JSON value in one spelling, so that equal values compare
// equal however they were written.
func canonical(raw json.RawMessage) []byte {
	if raw == nil {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
