package approvals

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// openAPIDocument is the OpenAPI 3.1 description of the hook, served at
// GET /v1/openapi.json. The handlers are tested against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPIDocument returns the OpenAPI 3.1 description of the hook.
func OpenAPIDocument() []byte { return slices.Clone(openAPIDocument) }

// serveOpenAPI answers the document, to anyone: it describes the routes,
// and nothing of any agent or request.
func (h *Handler) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPIDocument)
}

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

// tools lists the tools the agent may request, by name. Every agent may
// request every configured tool today.
func (h *Handler) tools(w http.ResponseWriter, r *http.Request, _ Agent) int {
	views := make([]ToolView, 0, len(h.svc.Tools))
	for name, t := range h.svc.Tools {
		v := ToolView{
			Name: name, Description: t.Description, Reversible: t.Reversible,
			Policy: PolicyView{Approvals: 1, Approvers: append([]string{}, t.Approvers...)},
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
