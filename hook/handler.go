package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// MaxWait caps a long-poll.
const MaxWait = 60 * time.Second

// Handler serves the agent HTTP hook (README.md, "Agent API").
type Handler struct {
	svc      *approvals.Service
	agents   Agents
	listener store.Notifier
	logger   *slog.Logger
	metrics  *Metrics
	mux      *http.ServeMux
}

// NewHandler returns the hook's routes under /v1/.
func NewHandler(svc *approvals.Service, agents Agents, listener store.Notifier, logger *slog.Logger, metrics *Metrics) *Handler {
	h := &Handler{svc: svc, agents: agents, listener: listener, logger: logger, metrics: metrics, mux: http.NewServeMux()}
	h.mux.Handle("POST /v1/requests", h.route("create", h.create))
	h.mux.Handle("GET /v1/requests", h.route("list", h.list))
	h.mux.Handle("GET /v1/requests/{ref}", h.route("get", h.get))
	h.mux.Handle("POST /v1/requests/{ref}/cancel", h.route("cancel", h.cancel))
	h.mux.Handle("POST /v1/requests/{ref}/redrive", h.route("redrive", h.redrive))
	h.mux.Handle("GET /v1/tools", h.route("tools", h.tools))
	h.mux.HandleFunc("GET /v1/openapi.json", h.serveOpenAPI)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// route authenticates the agent and times the request.
func (h *Handler) route(name string, fn func(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		agent, ok := h.agents.Authenticate(r.Header.Get("Authorization"))
		var status int
		if !ok {
			if name == "create" {
				h.metrics.Intake.WithLabelValues("unauthorized").Inc()
			}
			status = writeRefusal(w, approvals.RefusalFor(approvals.ErrUnauthorized))
		} else {
			status = fn(w, r, agent)
		}
		h.metrics.HTTPDuration.WithLabelValues(name, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
	})
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	if r.ContentLength > approvals.MaxBodyBytes {
		return writeRefusal(w, approvals.RefusalFor(approvals.ErrTooLarge))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, approvals.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return writeRefusal(w, approvals.RefusalFor(approvals.ErrTooLarge))
		}
		return writeRefusal(w, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeMalformedJSON, Message: "The body could not be read."}))
	}
	in, err := approvals.DecodeIntent(body)
	if err == nil {
		err = applyKeyHeader(&in, r.Header.Get("Idempotency-Key"))
	}
	var req store.Request
	var created bool
	if err == nil {
		req, created, err = h.svc.Submit(r.Context(), agent.Name, in)
	}
	if err != nil {
		outcome := "invalid"
		switch code := approvals.RefusalFor(err).Code; code {
		case approvals.CodeKeyReused, approvals.CodeUnavailable, approvals.CodeUnknownTool, approvals.CodeInvalidEffect:
			outcome = code
		}
		h.metrics.Intake.WithLabelValues(outcome).Inc()
		return h.writeServiceError(w, r, err)
	}
	view, err := viewOf(r.Context(), h.svc, req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	if created {
		h.metrics.Intake.WithLabelValues("created").Inc()
		return writeJSON(w, http.StatusCreated, view)
	}
	h.metrics.Intake.WithLabelValues("replayed").Inc()
	w.Header().Set("Idempotent-Replayed", "true")
	return writeJSON(w, http.StatusOK, view)
}

// applyKeyHeader takes a client key from the Idempotency-Key header; it must
// agree with the body's idempotency_key when both are sent.
func applyKeyHeader(in *approvals.Intent, header string) error {
	if header == "" {
		return nil
	}
	if !approvals.ValidClientKey(header) {
		return invalid("Idempotency-Key", "the Idempotency-Key header must be 8 to 255 printable ASCII characters")
	}
	if in.IdempotencyKey != "" && in.IdempotencyKey != header {
		return invalid("idempotency_key", "idempotency_key and the Idempotency-Key header differ")
	}
	in.IdempotencyKey = header
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	query := r.URL.Query()
	wait, err := parseWait(query.Get("wait"))
	if err != nil {
		return writeRefusal(w, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeInvalidRequest, Message: err.Error(), Field: "wait"}))
	}
	since, err := parseSince(query.Get("since"))
	if err != nil {
		return writeRefusal(w, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeInvalidRequest, Message: err.Error(), Field: "since"}))
	}
	ref := r.PathValue("ref")
	if wait == 0 {
		req, err := h.svc.Get(r.Context(), agent, ref)
		if err != nil {
			return h.writeServiceError(w, r, err)
		}
		view, err := viewOf(r.Context(), h.svc, req)
		if err != nil {
			return h.writeServiceError(w, r, err)
		}
		return writeJSON(w, http.StatusOK, view)
	}
	view, err := h.waitForChange(r.Context(), agent, ref, wait, since)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

// recheckEvery bounds how long a long-poll relies on wake-ups alone: a
// notification lost while the listener reconnects costs at most this.
const recheckEvery = 5 * time.Second

// waitForChange answers at once when the request is settled or its version
// is past since (since < 0: the version read first); otherwise it waits for
// the version to move past it, or for wait to end. It subscribes before the
// first read so no change between the read and the wait is missed.
func (h *Handler) waitForChange(ctx context.Context, agent approvals.Agent, ref string, wait time.Duration, since int64) (View, error) {
	req, err := h.svc.Get(ctx, agent, ref)
	if err != nil {
		return View{}, err
	}
	changed, unsubscribe := h.listener.SubscribeChange(req.ID)
	defer unsubscribe()
	view, err := h.read(ctx, agent, req.ID)
	if err != nil {
		return View{}, err
	}
	if since < 0 {
		since = view.Version
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	recheck := time.NewTicker(recheckEvery)
	defer recheck.Stop()
	for !view.Settled && view.Version <= since {
		select {
		case <-ctx.Done():
			return view, nil
		case <-timer.C:
			return view, nil
		case <-changed:
		case <-recheck.C:
		}
		if view, err = h.read(ctx, agent, req.ID); err != nil {
			return View{}, err
		}
	}
	return view, nil
}

// read returns the representation of the request with id, as agent sees it.
func (h *Handler) read(ctx context.Context, agent approvals.Agent, id string) (View, error) {
	req, err := h.svc.Get(ctx, agent, id)
	if err != nil {
		return View{}, err
	}
	return viewOf(ctx, h.svc, req)
}

// parseSince reads ?since=N, a version the caller has seen; -1 when absent.
func parseSince(s string) (int64, error) {
	if s == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("since must be a version: a whole number, 0 or more")
	}
	return n, nil
}

func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		secs, convErr := strconv.Atoi(s)
		if convErr != nil {
			return 0, errors.New("wait must be a duration such as 30s")
		}
		d = time.Duration(secs) * time.Second
	}
	if d < 0 || d > MaxWait {
		return 0, errors.New("wait must be between 0s and 60s")
	}
	return d, nil
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	req, err := h.svc.Cancel(r.Context(), agent, r.PathValue("ref"))
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	view, err := viewOf(r.Context(), h.svc, req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

func (h *Handler) redrive(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	req, err := h.svc.Redrive(r.Context(), agent, r.PathValue("ref"), h.agents.hasCallback)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	view, err := viewOf(r.Context(), h.svc, req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

// writeServiceError answers an error with its refusal: a store out of reach
// adds Retry-After, and anything unknown is a 500 that reveals nothing but
// is logged. A client that went away gets nothing.
func (h *Handler) writeServiceError(w http.ResponseWriter, r *http.Request, err error) int {
	if errors.Is(err, context.Canceled) {
		return 499
	}
	ref := approvals.RefusalFor(err)
	switch ref.Code {
	case approvals.CodeUnavailable:
		h.logger.Warn("hook request failed: database unavailable", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", strconv.Itoa(int(approvals.RetryAfter/time.Second)))
	case approvals.CodeInternal:
		h.logger.Error("hook request failed", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	return writeRefusal(w, ref)
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	} `json:"error"`
}

// invalid is an invalid_request naming field.
func invalid(field, format string, args ...any) *approvals.InputError {
	return &approvals.InputError{Code: approvals.CodeInvalidRequest, Field: field, Message: fmt.Sprintf(format, args...)}
}

// writeRefusal writes a refusal as the hook's error body, with its code's
// status.
func writeRefusal(w http.ResponseWriter, ref approvals.Refusal) int {
	var body errorBody
	body.Error.Code, body.Error.Message, body.Error.Field = ref.Code, ref.Message, ref.Field
	return writeJSON(w, Status(ref.Code), body)
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return status
}
