package console

import (
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Prefix is where serve mounts the console; the provider's callback is
// Prefix + "/callback".
const Prefix = "/console"

// Via is what decisions made here record as their channel.
const Via = "console"

// DefaultSessionTTL is how long a sign-in lasts when Options leave it unset.
const DefaultSessionTTL = 8 * time.Hour

// maxFormBytes bounds a form: a batch of maxBatch requests is the largest.
const maxFormBytes = 64 << 10

// Options configure the console.
type Options struct {
	Service *approvals.Service
	Store   store.Store // nil: Service.DB
	// Issuer, ClientID, ClientSecret and RedirectURL are the console's
	// client at the OpenID provider; RedirectURL ends in /console/callback.
	Issuer, ClientID, ClientSecret, RedirectURL string
	// GroupsClaim names the ID token's claim listing the reviewer's groups.
	GroupsClaim string
	SessionTTL  time.Duration // 0: DefaultSessionTTL
	// Secrets derive the key that signs the cookies (the dispatch secrets:
	// every replica then accepts a session); none: a random key.
	Secrets [][]byte
	// HTTPClient reaches the provider; nil: one with a 10 s timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger // nil: discard
	Now        func() time.Time
	// Previews asks a request's preview that no card surface asked (a
	// tool reviewed in the console alone) when its page is shown; nil
	// shows what is stored (change.go).
	Previews *surface.Previewer
}

// Handler serves the console under Prefix.
type Handler struct {
	opts   Options
	svc    *approvals.Service
	db     store.Store
	logger *slog.Logger
	prefix string
	secure bool
	signer signer
	client *http.Client
	idp    idp
	now    func() time.Time
	next   http.Handler
}

// New returns the console's handler; mount it at Prefix + "/". The
// provider is discovered at the first sign-in.
func New(opts Options) *Handler {
	h := &Handler{opts: opts, svc: opts.Service, db: opts.Store, logger: opts.Logger, prefix: Prefix,
		signer: newSigner(opts.Secrets), client: opts.HTTPClient, now: opts.Now}
	if h.db == nil {
		h.db = opts.Service.DB
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	if h.client == nil {
		h.client = &http.Client{Timeout: 10 * time.Second}
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.opts.SessionTTL <= 0 {
		h.opts.SessionTTL = DefaultSessionTTL
	}
	if u, err := url.Parse(opts.RedirectURL); err == nil && u.Scheme == "https" {
		h.secure = true
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET "+h.prefix+"/login", h.login)
	mux.HandleFunc("GET "+h.prefix+"/callback", h.callback)
	mux.HandleFunc("POST "+h.prefix+"/logout", h.logout)
	mux.HandleFunc("GET "+h.prefix+"/{$}", h.queue)
	mux.HandleFunc("GET "+h.prefix+"/requests/{ref}", h.request)
	mux.HandleFunc("POST "+h.prefix+"/decide", h.decide)
	mux.HandleFunc("GET "+h.prefix+"/batch", h.batchConfirm)
	mux.HandleFunc("POST "+h.prefix+"/batch", h.batchApprove)
	mux.HandleFunc("GET "+h.prefix+"/grants", h.grants)
	mux.HandleFunc("POST "+h.prefix+"/grants/revoke", h.revokeGrant)
	h.routeEdits(mux)
	mux.HandleFunc(h.prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, http.StatusNotFound, "There is no such page in the console.")
	})

	h.next = reviewpage.SecurityHeaders(reviewpage.CrossOriginProtection(mux, h.logger, func(w http.ResponseWriter) {
		h.fail(w, http.StatusForbidden, "This form was sent from another site, so it was refused. Decide from the console itself.")
	}))
	return h
}

// ServeHTTP serves one console request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.next.ServeHTTP(w, r) }

// authorize returns the request's session. Without one it redirects to the
// sign-in (a GET comes back to where it was) and returns false; an unsafe
// request must also carry the session's CSRF token in its form, else 403.
// The context of r then carries the reviewer, for the group resolver.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) (claims, bool) {
	s, ok := h.session(r)
	if !ok {
		next := h.prefix + "/"
		if r.Method == http.MethodGet {
			next = r.URL.RequestURI()
		}
		http.Redirect(w, r, h.prefix+"/login?next="+url.QueryEscape(next), http.StatusSeeOther)
		return claims{}, false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			h.fail(w, http.StatusBadRequest, "The form could not be read.")
			return claims{}, false
		}
		if !csrfOK(r, s) {
			h.logger.Warn("console form without this session's CSRF token refused", slog.String("reviewer", s.User), slog.String("path", r.URL.Path))
			h.fail(w, http.StatusForbidden, "This form does not carry your session's token, so it was refused. Reload the page and try again.")
			return claims{}, false
		}
	}
	*r = *r.WithContext(withReviewer(r.Context(), s))
	return s, true
}
