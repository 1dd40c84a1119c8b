package reviewpage

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// A page set parses with the shared style and renders whole: escaped data
// under the status asked, or a plain 500 with nothing of the page when its
// template fails.
func TestParseAndRender(t *testing.T) {
	t.Parallel()
	pages := Parse(os.DirFS("testdata"), Funcs("/x"), []string{"hello", "broken"})
	w := httptest.NewRecorder()
	Render(w, slog.New(slog.DiscardHandler), pages["hello"], http.StatusTeapot, map[string]string{"Name": "<ana>"})
	body := w.Body.String()
	if w.Code != http.StatusTeapot || w.Header().Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.Contains(body, "Hello <b>&lt;ana&gt;</b> at /x") || !strings.Contains(body, "button.approve {") {
		t.Fatalf("rendered %d %q:\n%s", w.Code, w.Header().Get("Content-Type"), body)
	}
	w = httptest.NewRecorder()
	Render(w, slog.New(slog.DiscardHandler), pages["broken"], http.StatusOK, map[string]int{"Missing": 1})
	if w.Code != http.StatusInternalServerError || strings.Contains(w.Body.String(), "<main>") {
		t.Fatalf("a failing template answered %d:\n%s", w.Code, w.Body.String())
	}
}

// The pages carry the security headers, and a form from another site is
// refused before the handler sees it.
func TestSecurityMiddleware(t *testing.T) {
	t.Parallel()
	var reached atomic.Int32
	h := SecurityHeaders(CrossOriginProtection(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = io.WriteString(w, "ok")
	}), slog.New(slog.DiscardHandler), func(w http.ResponseWriter) { http.Error(w, "refused", http.StatusForbidden) }))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k, v := range map[string]string{"Content-Security-Policy": ContentSecurityPolicy, "X-Frame-Options": "DENY",
		"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s is %q, want %q", k, got, v)
		}
	}
	for site, want := range map[string]int{"cross-site": http.StatusForbidden, "same-origin": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("a=1"))
		req.Header.Set("Sec-Fetch-Site", site)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want || resp.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("a %s POST answered %d, want %d", site, resp.StatusCode, want)
		}
	}
	if n := reached.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2 (the GET and the same-origin POST)", n)
	}
}
