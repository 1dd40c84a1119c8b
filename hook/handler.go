package hook

import (
	"context"
	"errors"
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
	agents   *AgentSet
	listener store.Notifier
	logger   *slog.Logger
	metrics  *Metrics
	mux      *http.ServeMux
	// operations are the routes served, as "METHOD /pattern".
	operations []string
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	if !isJSON(r.Header.Get("Content-Type")) {
		return writeRefusal(w, r, unsupportedMediaType)
	}
	if r.ContentLength > approvals.MaxBodyBytes {
		return writeRefusal(w, r, approvals.RefusalFor(approvals.ErrTooLarge))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, approvals.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return writeRefusal(w, r, approvals.RefusalFor(approvals.ErrTooLarge))
		}
		return writeRefusal(w, r, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeMalformedJSON, Message: "The body could not be read."}))
	}
	in, err := approvals.DecodeIntent(body)
	header := r.Header.Get("Idempotency-Key")
	if err == nil {
		err = applyKeyHeader(&in, header)
	}
	var req store.Request
	var created bool
	if err == nil {
		req, created, err = h.svc.Submit(r.Context(), agent.Name, in)
	}
	if err != nil {
		outcome := "invalid"
		switch code := approvals.RefusalFor(err).Code; code {
		case approvals.CodeKeyReused, approvals.CodePruned, approvals.CodeUnavailable, approvals.CodeUnknownTool, approvals.CodeInvalidEffect:
			outcome = code
		}
		h.metrics.Intake.WithLabelValues(outcome).Inc()
		return h.writeServiceError(w, r, namingKeyHeader(err, header))
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

// namingKeyHeader names the Idempotency-Key header, rather than the body's
// idempotency_key, in a refusal of the key the header sent.
func namingKeyHeader(err error, header string) error {
	var input *approvals.InputError
	if header != "" && errors.As(err, &input) && input.Field == "/idempotency_key" {
		named := *input
		named.Field = "Idempotency-Key"
		return &named
	}
	return err
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
		return invalid("Idempotency-Key", "idempotency_key and the Idempotency-Key header differ")
	}
	in.IdempotencyKey = header
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	query := r.URL.Query()
	wait, err := parseWait(query.Get("wait"))
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(invalid("wait", "%v", err)))
	}
	since, err := parseSince(query.Get("since"))
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(invalid("since", "%v", err)))
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
	req, err := h.svc.Redrive(r.Context(), agent, r.PathValue("ref"), h.agents.Load().hasCallback)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	view, err := viewOf(r.Context(), h.svc, req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}
