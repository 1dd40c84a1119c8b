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

// Handler serves the agent HTTP hook (README.md, "Agent API").
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
	h.mux.Handle("GET /v1/tools", h.route("tools", h.tools))
	h.mux.HandleFunc("GET /v1/openapi.json", h.serveOpenAPI)
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
			status = writeRefusal(w, RefusalFor(ErrUnauthorized))
		} else {
			status = fn(w, r, agent)
		}
		h.metrics.HTTPDuration.WithLabelValues(name, strconv.Itoa(status)).Observe(time.Since(start).Seconds())
	})
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, agent Agent) int {
	if r.ContentLength > MaxBodyBytes {
		return writeRefusal(w, RefusalFor(ErrTooLarge))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return writeRefusal(w, RefusalFor(ErrTooLarge))
		}
		return writeRefusal(w, RefusalFor(&InputError{Code: CodeMalformedJSON, Message: "The body could not be read."}))
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
		outcome := "invalid"
		switch code := RefusalFor(err).Code; code {
		case CodeKeyReused, CodeUnavailable, CodeUnknownTool:
			outcome = code
		}
		h.metrics.Intake.WithLabelValues(outcome).Inc()
		return h.writeServiceError(w, r, err)
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
		return writeRefusal(w, RefusalFor(&InputError{Code: CodeInvalidRequest, Message: err.Error()}))
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
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	view, err := h.svc.View(r.Context(), req)
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
	ref := RefusalFor(err)
	switch ref.Code {
	case CodeUnavailable:
		h.logger.Warn("hook request failed: database unavailable", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	case CodeInternal:
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

// writeRefusal writes a refusal as the hook's error body.
func writeRefusal(w http.ResponseWriter, ref Refusal) int {
	var body errorBody
	body.Error.Code, body.Error.Message, body.Error.Field = ref.Code, ref.Message, ref.Field
	return writeJSON(w, ref.Status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return status
}
