package inbox

import (
	"bytes"
	"embed"
	"html/template"
	"log/slog"
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
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS,
			"templates/layout.html", "templates/parts.html", "templates/change.html", "templates/"+name+".html"))
	}
	return pages
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
	var buf bytes.Buffer
	if err := h.pages[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		h.logger.Error("rendering page", slog.String("page", name), slog.String("error", err.Error()))
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
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
