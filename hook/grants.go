package hook

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// grantView is a standing grant as the admin routes show it.
type grantView struct {
	ID            string                     `json:"id"`
	Tool          string                     `json:"tool"`
	Agent         string                     `json:"agent"`
	Grantor       string                     `json:"grantor"`
	RequestID     string                     `json:"request_id"`
	Round         int                        `json:"round"`
	Match         map[string]json.RawMessage `json:"match"`
	AmountField   string                     `json:"amount_field,omitempty"`
	AmountCeiling *string                    `json:"amount_ceiling"`
	CreatedAt     time.Time                  `json:"created_at"`
	ExpiresAt     time.Time                  `json:"expires_at"`
	RevokedAt     *time.Time                 `json:"revoked_at"`
	RevokedBy     string                     `json:"revoked_by,omitempty"`
}

func viewOfGrant(g store.Grant) grantView {
	match := g.Match
	if match == nil {
		match = map[string]json.RawMessage{}
	}
	return grantView{ID: g.ID, Tool: g.Tool, Agent: g.Agent, Grantor: g.Grantor, RequestID: g.RequestID, Round: g.Round,
		Match: match, AmountField: g.AmountField, AmountCeiling: g.AmountCeiling,
		CreatedAt: g.CreatedAt.UTC(), ExpiresAt: g.ExpiresAt.UTC(), RevokedAt: g.RevokedAt, RevokedBy: g.RevokedBy}
}

// adminOnly answers an agent that is not an admin as if the route did not
// exist: grants are reviewers' business, not an agent's.
func adminOnly(w http.ResponseWriter, r *http.Request) int {
	return writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeNotFound,
		Message: "No route of the agent API has this path for this agent; the grants routes are an admin agent's."})
}

// grants lists the standing grants live now, everyone's.
func (h *Handler) grants(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	if !agent.Admin {
		return adminOnly(w, r)
	}
	grants, err := h.svc.Grants(r.Context(), "", true)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	views := make([]grantView, len(grants))
	for i, g := range grants {
		views[i] = viewOfGrant(g)
	}
	return writeJSON(w, http.StatusOK, map[string]any{"grants": views})
}

// revokeGrant ends a grant now, as the admin agent; a grant that had ended
// is answered as it stands.
func (h *Handler) revokeGrant(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	if !agent.Admin {
		return adminOnly(w, r)
	}
	g, _, err := h.svc.RevokeGrant(r.Context(), r.PathValue("id"), store.AgentActor(agent.Name), true)
	if errors.Is(err, approvals.ErrNotFound) {
		return writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeNotFound, Message: "No grant has that id."})
	}
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, viewOfGrant(g))
}
