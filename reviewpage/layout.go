package reviewpage

import (
	"bytes"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
)

//go:embed style.html
var styleFS embed.FS

// Parse builds each named page of a page set once: the shared style
// (template "reviewpage-style", which a layout puts in its <style>), then
// from pages templates/layout.html, templates/parts.html and
// templates/<name>.html, with funcs; shared names more of pages' files
// every page includes (a partial such as templates/change.html). Agent text reaches the pages only as
// data, so html/template escapes it for the context it lands in.
func Parse(pages fs.FS, funcs template.FuncMap, names []string, shared ...string) map[string]*template.Template {
	out := make(map[string]*template.Template, len(names))
	for _, name := range names {
		t := template.Must(template.New(name).Funcs(funcs).ParseFS(styleFS, "style.html"))
		files := append([]string{"templates/layout.html", "templates/parts.html"}, shared...)
		out[name] = template.Must(t.ParseFS(pages, append(files, "templates/"+name+".html")...))
	}
	return out
}

// Render writes a page's "layout" with data under status, or a plain 500
// when the template fails: the page is rendered whole before anything is
// sent, so a failure never leaves half a page.
func Render(w http.ResponseWriter, logger *slog.Logger, page *template.Template, status int, data any) {
	var buf bytes.Buffer
	if err := page.ExecuteTemplate(&buf, "layout", data); err != nil {
		logger.Error("rendering page", slog.String("page", page.Name()), slog.String("error", err.Error()))
		http.Error(w, "The page could not be rendered.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}
