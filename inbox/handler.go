package inbox

import (
	"html/template"
	"log/slog"
	"net/http"
	"strings"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// DefaultPrefix is where serve mounts the inbox.
const DefaultPrefix = "/inbox"

// Via is what decisions made here record as their channel.
const Via = "inbox"

// maxFormBytes bounds a decision form, which holds three short fields.
const maxFormBytes = 8 << 10

// Options configure the inbox.
type Options struct {
	Service *approvals.Service
	Store   store.Store // nil: Service.DB
	// Reviewer is the user id decisions are recorded under; it must be one of
	// the tool's approvers, as for a click in Slack.
	Reviewer string
	Logger   *slog.Logger // nil: discard
	// Prefix is the path the handler is mounted under, without the trailing
	// slash; "" means DefaultPrefix.
	Prefix string
	// Previews asks a request's preview that no card surface asked when
	// its page is shown; nil shows what is stored (preview.go).
	Previews *surface.Previewer
}

// Handler serves the inbox under its prefix.
type Handler struct {
	svc      *approvals.Service
	db       store.Store
	reviewer string
	logger   *slog.Logger
	prefix   string
	pages    map[string]*template.Template
	session  *session
	next     http.Handler
	previews *surface.Previewer
}

// New returns the inbox handler with a fresh entry link (EntryURL). Mount
// it at Prefix + "/":
//
//	mux.Handle("/inbox/", inbox.New(inbox.Options{...}))
func New(opts Options) *Handler {
	h := &Handler{
		svc: opts.Service, db: opts.Store, reviewer: opts.Reviewer, logger: opts.Logger,
		prefix: strings.TrimSuffix(opts.Prefix, "/"), session: newSession(), previews: opts.Previews,
	}
	if h.db == nil {
		h.db = opts.Service.DB
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	if h.prefix == "" {
		h.prefix = DefaultPrefix
	}
	h.pages = parsePages(h.prefix)

	mux := http.NewServeMux()
	mux.HandleFunc("GET "+h.prefix+"/{$}", h.inbox)
	mux.HandleFunc("GET "+h.prefix+"/requests/{ref}", h.request)
	mux.HandleFunc("GET "+h.prefix+"/lookup", h.lookup)
	mux.HandleFunc("POST "+h.prefix+"/decide", h.decide)
	mux.HandleFunc("GET "+h.prefix+"/grants", h.grants)
	mux.HandleFunc("POST "+h.prefix+"/grants/revoke", h.revokeGrant)
	mux.HandleFunc(h.prefix+"/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, http.StatusNotFound, "There is no such page in the inbox.")
	})

	cop := reviewpage.CrossOriginProtection(mux, h.logger, func(w http.ResponseWriter) {
		h.fail(w, http.StatusForbidden, "This form was sent from another site, so it was refused. Decide from the inbox itself.")
	})
	h.next = loopbackOnly(reviewpage.SecurityHeaders(h.requireSession(cop)))
	return h
}

// ServeHTTP serves one inbox request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.next.ServeHTTP(w, r) }
