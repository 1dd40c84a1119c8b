package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/countersign/countersign/store"
)

// MaxWait caps a long-poll.
const MaxWait = 60 * time.Second

// Handler serves the agent HTTP hook (DESIGN §3).
type Handler struct {
	svc      *Service
	agents   Agents
	listener store.Notifier
	logger   *slog.Logger
	metrics  *Metrics
	mux      *http.ServeMux
}

// NewHandler returns the hook's routes under /v1/.
func NewHandler(svc *Service, agents Agents, listener store.Notifier, logger *slog.Logger, metrics *Metrics) *Handler {
	h := &Handler{svc: svc, agents: agents, listener: listener, logger: logger, metrics: metrics, mux: http.NewServeMux()}
	h.mux.Handle("POST /v1/requests", h.route("create", h.create))
	h.mux.Handle("GET /v1/requests/{ref}", h.route("get", h.get))
	h.mux.Handle("POST /v1/requests/{ref}/cancel", h.route("cancel", h.cancel))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// route authenticates the agent and times the request.
func (h *Handler) route(name string, fn func(w http.ResponseWriter, r *http.Request, agent Agent) int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		agent, ok := h.agents.Authenticate(r.Header.Get("Authorization"))
		var status int
		if !ok {
			if name == "create" {
				h.metrics.Intake.WithLabelValues("unauthorized").Inc()
			}
			status = writeError(w, http.StatusUnauthorized, CodeUnauthorized, "a valid agent bearer token is required")
		} else {
			status = fn(w, r, agent)
		}
		h.metrics.HTTPDuration.WithLabelValues(name, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
	})
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, agent Agent) int {
	if r.ContentLength > MaxBodyBytes {
		return writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "the body is larger than 1 MiB")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "the body is larger than 1 MiB")
		}
		return writeError(w, http.StatusBadRequest, CodeMalformedJSON, "the body could not be read")
	}
	in, err := DecodeIntent(body)
	if err == nil {
		err = applyKeyHeader(&in, r.Header.Get("Idempotency-Key"))
	}
	var req store.Request
	var created bool
	if err == nil {
		req, created, err = h.svc.Submit(r.Context(), agent.Name, in)
	}
	if err != nil {
		outcome, status := "invalid", 0
		switch {
		case errors.Is(err, ErrKeyTaken):
			outcome = "key_reused"
			status = writeError(w, http.StatusConflict, CodeKeyReused, "this key already names a request of another agent; send a different key")
		case store.IsUnavailable(err):
			outcome = "unavailable"
			status = h.writeServiceError(w, r, err)
		case errors.Is(err, ErrKeyReused):
			outcome = "key_reused"
			status = writeError(w, http.StatusConflict, CodeKeyReused, "this key already names a request with different run, step, tool or effect fields")
		case errors.Is(err, ErrUnknownTool):
			outcome = "unknown_tool"
			status = writeError(w, http.StatusUnprocessableEntity, CodeUnknownTool, "tool "+strconv.Quote(in.Tool)+" is not configured")
		default:
			status = h.writeServiceError(w, r, err)
		}
		h.metrics.Intake.WithLabelValues(outcome).Inc()
		return status
	}
	view, err := h.svc.View(r.Context(), req)
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
func applyKeyHeader(in *Intent, header string) error {
	if header == "" {
		return nil
	}
	if !ValidClientKey(header) {
		return invalid("Idempotency-Key", "the Idempotency-Key header must be 8 to 255 printable ASCII characters")
	}
	if in.IdempotencyKey != "" && in.IdempotencyKey != header {
		return invalid("idempotency_key", "idempotency_key and the Idempotency-Key header differ")
	}
	in.IdempotencyKey = header
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, agent Agent) int {
	wait, err := parseWait(r.URL.Query().Get("wait"))
	if err != nil {
		return writeError(w, http.StatusUnprocessableEntity, CodeInvalidRequest, err.Error())
	}
	ref := r.PathValue("ref")
	if wait == 0 {
		req, err := h.svc.Get(r.Context(), agent, ref)
		if err != nil {
			return h.writeServiceError(w, r, err)
		}
		view, err := h.svc.View(r.Context(), req)
		if err != nil {
			return h.writeServiceError(w, r, err)
		}
		return writeJSON(w, http.StatusOK, view)
	}
	view, err := h.waitForChange(r.Context(), agent, ref, wait)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

// waitForChange returns the request once its status, round or execution
// changes, or when wait ends. It subscribes before the first read so no
// change between the read and the wait is missed.
func (h *Handler) waitForChange(ctx context.Context, agent Agent, ref string, wait time.Duration) (View, error) {
	req, err := h.svc.Get(ctx, agent, ref)
	if err != nil {
		return View{}, err
	}
	changed, unsubscribe := h.listener.SubscribeChange(req.ID)
	defer unsubscribe()
	if req, err = h.svc.Get(ctx, agent, req.ID); err != nil {
		return View{}, err
	}
	first, err := h.svc.View(ctx, req)
	if err != nil {
		return View{}, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return first, nil
		case <-timer.C:
			return first, nil
		case <-changed:
			req, err := h.svc.Get(ctx, agent, first.ID)
			if err != nil {
				return View{}, err
			}
			now, err := h.svc.View(ctx, req)
			if err != nil {
				return View{}, err
			}
			if now.fingerprint() != first.fingerprint() {
				return now, nil
			}
		}
	}
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

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, agent Agent) int {
	req, err := h.svc.Cancel(r.Context(), agent, r.PathValue("ref"))
	var notPending *NotPendingError
	if errors.As(err, &notPending) {
		return writeError(w, http.StatusConflict, CodeAlreadyDecided, "the request is "+string(notPending.Status)+" and can no longer be cancelled")
	}
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	view, err := h.svc.View(r.Context(), req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

// writeServiceError answers input errors and not-found with their codes, a
// store out of reach with 503 unavailable and Retry-After, and anything else
// with a 500 that reveals nothing but is logged.
func (h *Handler) writeServiceError(w http.ResponseWriter, r *http.Request, err error) int {
	var input *InputError
	switch {
	case errors.As(err, &input):
		status := http.StatusUnprocessableEntity
		if input.Code == CodeMalformedJSON {
			status = http.StatusBadRequest
		}
		return writeErrorField(w, status, input.Code, input.Message, input.Field)
	case errors.Is(err, ErrNotFound):
		return writeError(w, http.StatusNotFound, CodeNotFound, "no request has that id or key")
	case errors.Is(err, context.Canceled):
		return 499 // the client went away; nothing to write
	case store.IsUnavailable(err):
		h.logger.Warn("hook request failed: database unavailable", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "countersign cannot reach its database right now; retry after the Retry-After delay")
	}
	h.logger.Error("hook request failed", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	return writeError(w, http.StatusInternalServerError, "internal", "countersign could not complete the request; it is safe to retry")
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string) int {
	return writeErrorField(w, status, code, message, "")
}

func writeErrorField(w http.ResponseWriter, status int, code, message, field string) int {
	var body errorBody
	body.Error.Code, body.Error.Message, body.Error.Field = code, message, field
	return writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return status
}
