package approvals

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/countersign/countersign/store"
)

// List returns up to p.Limit of the requests agent may see that match p,
// newest first: its own, or every agent's for an admin (List sets
// p.RequestedBy, whatever the caller put there). A status countersign does
// not have, a tool the configuration does not have, or a run id no request
// can hold is an *InputError naming the query parameter (status, tool,
// run_id), and nothing is read.
func (s *Service) List(ctx context.Context, agent Agent, p store.ListRequestsParams) ([]store.Request, error) {
	switch p.Status {
	case "", store.RequestPending, store.RequestApproved, store.RequestRejected, store.RequestExpired, store.RequestCancelled, store.RequestEdited:
	default:
		return nil, invalidParameter("status", "status must be one of pending, approved, rejected, expired, cancelled and edited")
	}
	if _, ok := s.CurrentTools()[p.Tool]; p.Tool != "" && !ok {
		return nil, invalidParameter("tool", "tool %q is not configured", p.Tool)
	}
	if len(p.RunID) > 256 || strings.IndexByte(p.RunID, 0) >= 0 || !utf8.ValidString(p.RunID) {
		return nil, invalidParameter("run_id", "run_id must be UTF-8 text of at most 256 bytes, without U+0000 (NUL)")
	}
	p.RequestedBy = agent.Name
	if agent.Admin {
		p.RequestedBy = ""
	}
	return s.DB.ListRequests(ctx, p)
}

// invalidParameter is an invalid_request naming a query parameter as
// itself (a body member is named by its JSON pointer).
func invalidParameter(name, format string, args ...any) *InputError {
	return &InputError{Code: CodeInvalidRequest, Field: name, Message: fmt.Sprintf(format, args...)}
}
