package hook

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/countersign/countersign/approvals"
)

// ToolView is a tool as GET /v1/tools shows it to an agent.
type ToolView struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Reversible  bool            `json:"reversible"`
	Policy      PolicyView      `json:"policy"`
	Schema      json.RawMessage `json:"effect_schema,omitempty"`
}

// PolicyView is who decides a tool's requests, and how many must approve.
type PolicyView struct {
	Approvals int      `json:"approvals"`
	Approvers []string `json:"approvers"`
}

// tools answers GET /v1/tools: the tools the agent may request, by name. Every agent may
// request every configured tool today.
func (h *Handler) tools(w http.ResponseWriter, r *http.Request, _ approvals.Agent) int {
	views := make([]ToolView, 0, len(h.svc.CurrentTools()))
	for name, t := range h.svc.CurrentTools() {
		v := ToolView{
			Name: name, Description: t.Description, Reversible: t.Reversible,
			// The tool's own policy; a tier that matches an effect sets the
			// request's (its representation's policy).
			Policy: PolicyView{Approvals: max(t.Approvals, 1), Approvers: append([]string{}, t.Approvers...)},
		}
		if t.EffectSchema != nil {
			v.Schema = t.EffectSchema.JSON()
		}
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b ToolView) int { return strings.Compare(a.Name, b.Name) })
	return writeJSON(w, http.StatusOK, struct {
		Tools []ToolView `json:"tools"`
	}{views})
}
