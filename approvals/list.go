package approvals

import (
	"context"
	"unicode/utf8"

	"github.com/countersign/countersign/store"
)

// List returns up to p.Limit of the requests agent may see that match p,
// newest first: its own, or every agent's for an admin (List sets
// p.RequestedBy, whatever the caller put there). A status countersign does
// not have, a tool the configuration does not have, or a run id no request
// can hold is an *InputError naming the filter (status, tool, run_id), and
// nothing is read.
func (s *Service) List(ctx context.Context, agent Agent, p store.ListRequestsParams) ([]store.Request, error) {
	switch p.Status {
	case "", store.RequestPending, store.RequestApproved, store.RequestRejected, store.RequestExpired, store.RequestCancelled:
	default:
		return nil, invalid("status", "status must be one of pending, approved, rejected, expired and cancelled")
	}
	if _, ok := s.Tools[p.Tool]; p.Tool != "" && !ok {
		return nil, invalid("tool", "tool %q is not configured", p.Tool)
	}
	if err := checkText("run_id", p.RunID, 256); err != nil {
		return nil, err
	}
	if !utf8.ValidString(p.RunID) {
		return nil, invalid("run_id", "run_id is not UTF-8")
	}
	p.RequestedBy = agent.Name
	if agent.Admin {
		p.RequestedBy = ""
	}
	return s.DB.ListRequests(ctx, p)
}
