package reviewpage

import (
	"log/slog"
	"net/http"
)

// ContentSecurityPolicy lets a review page load nothing but its inline
// style, post forms only to its own origin, and be framed nowhere.
const ContentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// SecurityHeaders keep the pages out of frames (a framed Approve button
// could be clickjacked), forbid anything but the inline style to load,
// and keep them out of caches and Referer headers.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// CrossOriginProtection refuses an unsafe request sent from another site
// (net/http's check of Sec-Fetch-Site, else Origin against Host): it is
// logged, and refused answers it (a page saying why, with 403).
func CrossOriginProtection(next http.Handler, logger *slog.Logger, refused func(http.ResponseWriter)) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger.Warn("cross-origin request refused", slog.String("method", r.Method), slog.String("path", r.URL.Path))
		refused(w)
	}))
	return cop.Handler(next)
}
