package hook

import (
	"net/http"
	"slices"
	"strings"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/wire"
)

// tools answers GET /v1/tools: the tools the agent may request, by name. Every agent may
// request every configured tool today.
func (h *Handler) tools(w http.ResponseWriter, r *http.Request, _ approvals.Agent) int {
	views := make([]wire.Tool, 0, len(h.svc.CurrentTools()))
	for name, t := range h.svc.CurrentTools() {
		v := wire.Tool{
			Name: name, Description: t.Description, Reversible: t.Reversible,
			// The tool's own policy; a tier that matches an effect sets the
			// request's (its representation's policy).
			Policy: toolPolicy(t),
		}
		if t.EffectSchema != nil {
			v.EffectSchema = t.EffectSchema.JSON()
		}
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b wire.Tool) int { return strings.Compare(a.Name, b.Name) })
	return writeJSON(w, http.StatusOK, wire.ToolList{Tools: views})
}

// toolPolicy is the tool's own rule as GET /v1/tools shows it.
func toolPolicy(t approvals.Tool) wire.Policy {
	p := wire.Policy{Verdict: string(approvals.VerdictAsk), Approvals: max(t.Approvals, 1),
		Approvers: append([]string{}, t.Approvers...), Version: t.PolicyVersion()}
	if t.Verdict != "" && t.Verdict != approvals.VerdictAsk {
		p.Verdict, p.Approvals = string(t.Verdict), 0
	}
	return p
}
