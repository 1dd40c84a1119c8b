package inbox

import (
	"embed"
	"html/template"
	"net/http"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageNames are the pages; each is parsed with the layout and the shared parts.
var pageNames = []string{"inbox", "request", "lookup", "grants", "error"}

// parsePages builds every page once. Agent text reaches the pages only as
// data, so html/template escapes it for the context it lands in.
func parsePages(prefix string) map[string]*template.Template {
	funcs := reviewpage.Funcs(prefix)
	funcs["deref"] = func(s *string) string { return deref(s) }
	funcs["grantText"] = approvals.GrantText
	return reviewpage.Parse(templateFS, funcs, pageNames, "templates/change.html")
}

// page is what the layout needs from every page.
type page struct {
	Title  string
	Query  string // the lookup box's text
	Follow bool   // reload every few seconds: the page follows a running write
}

// render writes a page, or a plain 500 if the template fails before anything
// was sent.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	reviewpage.Render(w, h.logger, h.pages[name], status, data)
}

type errorPage struct {
	page
	Code    string // a refusal's code, if the page answers one
	Message string
}

// fail answers with an error page carrying a sentence for the reviewer.
func (h *Handler) fail(w http.ResponseWriter, status int, message string) {
	h.failCode(w, status, "", message)
}

// failCode answers with an error page for a refusal: its code and its words.
func (h *Handler) failCode(w http.ResponseWriter, status int, code, message string) {
	h.render(w, status, "error", errorPage{page: page{Title: http.StatusText(status)}, Code: code, Message: message})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
