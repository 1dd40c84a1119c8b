package hook

import (
	"context"
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/requestid"
	"github.com/countersign/countersign/store"
)

// route is one operation of the agent API: its method and path pattern,
// the name its metrics carry, and its handler, which runs for an
// authenticated agent and returns the status it answered.
type route struct {
	method, pattern, name string
	fn                    func(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int
}

// NewHandler returns the hook's routes under /v1/. Every answer carries a
// Request-Id; every refusal, including an unknown route (404 not_found)
// and a method the route does not take (405 method_not_allowed, with
// Allow), is the one error envelope.
func NewHandler(svc *approvals.Service, agents Agents, listener store.Notifier, logger *slog.Logger, metrics *Metrics) *Handler {
	h := &Handler{svc: svc, agents: NewAgentSet(agents), listener: listener, logger: logger, metrics: metrics, mux: http.NewServeMux(),
		parking: newParking(listener)}
	routes := []route{
		{http.MethodPost, "/v1/requests", "create", h.create},
		{http.MethodGet, "/v1/requests", "list", h.list},
		{http.MethodGet, "/v1/requests/{ref}", "get", h.get},
		{http.MethodPost, "/v1/requests/{ref}/cancel", "cancel", h.cancel},
		{http.MethodPost, "/v1/requests/{ref}/redrive", "redrive", h.redrive},
		{http.MethodPost, "/v1/requests/{ref}/outcome", "outcome", h.outcome},
		{http.MethodGet, "/v1/tools", "tools", h.tools},
		{http.MethodGet, "/v1/gateway/tools", "gateway_tools", h.gatewayTools},
		{http.MethodPost, "/v1/gateway/call", "gateway_call", h.gatewayCall},
		{http.MethodGet, "/v1/grants", "grants", h.grants},
		{http.MethodPost, "/v1/grants/{id}/revoke", "revoke_grant", h.revokeGrant},
		{http.MethodPost, "/v1/hooks/pretooluse", "pretooluse", h.preToolUse},
		{http.MethodPost, "/v1/hooks/posttooluse", "posttooluse", h.postToolUse},
	}
	allowed := map[string][]string{"/v1/openapi.json": {http.MethodGet}, JWKSPath: {http.MethodGet}}
	h.mux.HandleFunc("GET /v1/openapi.json", h.serveOpenAPI)
	h.mux.HandleFunc("GET "+JWKSPath, h.serveJWKS)
	h.operations = []string{"GET /v1/openapi.json", "GET " + JWKSPath}
	for _, rt := range routes {
		h.mux.Handle(rt.method+" "+rt.pattern, h.authenticated(rt.name, rt.fn))
		h.operations = append(h.operations, rt.method+" "+rt.pattern)
		allowed[rt.pattern] = append(allowed[rt.pattern], rt.method)
	}
	for pattern, methods := range allowed {
		slices.Sort(methods)
		refuse := methodNotAllowed(methods)
		h.mux.Handle(pattern, refuse)
		if slices.Contains(methods, http.MethodGet) {
			// A GET pattern also takes HEAD; the API answers no HEAD.
			h.mux.Handle(http.MethodHead+" "+pattern, refuse)
		}
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeNotFound, Message: "No route of the agent API has this path."})
	})
	return h
}

// Operations lists what the hook serves, as "METHOD /pattern".
func (h *Handler) Operations() []string { return slices.Sorted(slices.Values(h.operations)) }

// ServeHTTP names the request (Request-Id), routes it, and logs its line;
// a parked long-poll logs its own when it is answered.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestid.New()
	w.Header().Set(requestid.Header, id)
	r = r.WithContext(requestid.With(r.Context(), id))
	sw := &statusWriter{ResponseWriter: w, start: start}
	h.mux.ServeHTTP(sw, r)
	if sw.parked {
		return
	}
	h.logRequest(r.Context(), r.Method, r.URL.Path, sw.status, time.Since(start))
}

// logRequest writes a request's log line.
func (h *Handler) logRequest(ctx context.Context, method, path string, status int, took time.Duration) {
	level := slog.LevelDebug
	switch {
	case status >= 500:
		level = slog.LevelError
	case status >= 400:
		level = slog.LevelInfo
	}
	h.logger.Log(ctx, level, "hook request", slog.String("method", method), slog.String("path", path),
		slog.Int("status", status), slog.Duration("took", took))
}

// authenticated authenticates the agent and times the request. A request
// without a valid token is 401 with the challenge RFC 6750 asks for.
func (h *Handler) authenticated(name string, fn func(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		authorization := r.Header.Get("Authorization")
		agent, tokenHash, ok := h.agents.Load().authenticate(authorization)
		var status int
		if !ok {
			if name == "create" {
				h.metrics.Intake.WithLabelValues("unauthorized").Inc()
			}
			status = refuseUnauthorized(w, r, authorization)
		} else {
			// The hash's first 8 hex digits: enough to find it in the
			// agent's token_sha256 list.
			h.metrics.TokenUses.WithLabelValues(agent.Name, hex.EncodeToString(tokenHash[:4])).Inc()
			status = fn(w, r, agent)
		}
		if status == statusParked {
			return // counted when it is answered
		}
		h.metrics.HTTPDuration.WithLabelValues(name, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
	})
}

// refuseUnauthorized answers a request without a valid token: 401 with the
// challenge RFC 6750 asks for.
func refuseUnauthorized(w http.ResponseWriter, r *http.Request, authorization string) int {
	challenge := `Bearer realm="countersign"`
	if authorization != "" {
		challenge += `, error="invalid_token"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	return writeRefusal(w, r, approvals.RefusalFor(approvals.ErrUnauthorized))
}

// methodNotAllowed answers a method a route does not take.
func methodNotAllowed(methods []string) http.Handler {
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeMethodNotAllowed,
			Message: "This route does not take " + r.Method + "; it takes " + allow + "."})
	})
}

// statusWriter remembers the status written, for the request's log line.
type statusWriter struct {
	http.ResponseWriter
	status int
	start  time.Time
	// parked is set when a long-poll took the connection (parkedPoll).
	parked bool
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Agents returns the set of agents h authenticates, to replace them on a
// configuration reload or to guard a surface served beside the API.
func (h *Handler) Agents() *AgentSet { return h.agents }
