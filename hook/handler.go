package hook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/wire"
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
	// parking holds the long-polls whose connections are parked.
	parking *parking
	// operations are the routes served, as "METHOD /pattern".
	operations []string
	// gateway is the MCP gateway serve sets, if any.
	gateway gatewayHolder
	// toolHooks maps a coding agent's tools for the permission hooks
	// (pretooluse.go); nil until SetToolHooks.
	toolHooks atomic.Pointer[ToolHooks]
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
	headers := r.Header.Values("Idempotency-Key")
	header := r.Header.Get("Idempotency-Key")
	if err == nil {
		err = applyKeyHeader(&in, headers)
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
		if mutant.Every("intake-500", 5) { // planted bug: stored, then answered 500
			return writeJSON(w, http.StatusInternalServerError, map[string]any{"error": map[string]any{"code": "internal", "message": "planted"}})
		}
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
// agree with the body's idempotency_key when both are sent. Two headers are
// refused: a proxy or a provider may read the other one.
func applyKeyHeader(in *approvals.Intent, headers []string) error {
	if len(headers) > 1 {
		return invalid("Idempotency-Key", "send one Idempotency-Key header, not %d", len(headers))
	}
	if len(headers) == 0 || headers[0] == "" {
		return nil
	}
	header := headers[0]
	if err := approvals.CheckClientKeyForm(header); err != nil {
		return invalid("Idempotency-Key", "%v", err)
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
		return h.getNow(w, r, agent, ref)
	}
	if sw, ok := h.canPark(w, r); ok {
		return h.waitParked(sw, r, agent, ref, wait, since)
	}
	view, err := h.waitForChange(r.Context(), agent, ref, wait, since)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

// getNow answers a GET without wait. It is a function of its own so that
// its locals (a request, a view) take no room in the frame of a long-poll
// that waits.
func (h *Handler) getNow(w http.ResponseWriter, r *http.Request, agent approvals.Agent, ref string) int {
	req, err := h.svc.Get(r.Context(), agent, ref)
	return h.answerView(w, r, req, err)
}

// waitForChange answers at once when the request is settled or its version
// is past since (since < 0: the version read first); otherwise it waits for
// the version to move past it, or for wait to end. It subscribes before the
// first read so no change between the read and the wait is missed, and
// re-reads only when woken: every transition that moves a version wakes its
// request's waiters when it commits, and the PostgreSQL listener wakes all
// of them once it listens again after losing its connection. While it
// waits it holds a subscription, one timer and the last representation
// read; nothing reads the database.
func (h *Handler) waitForChange(ctx context.Context, agent approvals.Agent, ref string, wait time.Duration, since int64) (*wire.Request, error) {
	id, err := aside(func() (string, error) {
		req, err := h.svc.Get(ctx, agent, ref)
		return req.ID, err
	})
	if err != nil {
		return nil, err
	}
	changed, unsubscribe := h.listener.SubscribeChange(id)
	defer unsubscribe()
	view, err := h.readAside(ctx, agent, id)
	if err != nil {
		return nil, err
	}
	if since < 0 {
		since = view.Version
	}
	if !waitsPast(view, since) {
		return view, nil
	}
	h.metrics.Waiting.Inc()
	defer h.metrics.Waiting.Dec()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for waitsPast(view, since) {
		select {
		case <-ctx.Done():
			return view, nil
		case <-timer.C:
			return view, nil
		case <-changed:
		}
		if view, err = h.readAside(ctx, agent, id); err != nil {
			return nil, err
		}
	}
	return view, nil
}

// waitsPast reports whether a long-poll that has seen since still waits on
// v: the request is unsettled and its version not past since.
func waitsPast(v *wire.Request, since int64) bool { return !v.Settled && v.Version <= since }

// readAside is read on a goroutine of its own (aside). The view is on the
// heap: the waiter's parked stack holds a pointer, not the whole struct.
func (h *Handler) readAside(ctx context.Context, agent approvals.Agent, id string) (*wire.Request, error) {
	return aside(func() (*wire.Request, error) {
		v, err := h.read(ctx, agent, id)
		return &v, err
	})
}

// aside runs fn on a goroutine of its own and returns what it returns. A
// database read grows a goroutine's stack to tens of kilobytes, and the
// runtime shrinks a parked goroutine's stack only at a garbage collection,
// which a server with nothing to do rarely runs: a long-poll that read on
// its own goroutine would keep that stack for as long as it waits. The
// goroutine that read is gone by then, its stack back in the runtime's pool.
// A panic in fn is raised again on the caller's goroutine, where the HTTP
// server recovers it, rather than ending the process.
func aside[T any](fn func() (T, error)) (T, error) {
	type result struct {
		v     T
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			r.panic = recover()
			done <- r
		}()
		r.v, r.err = fn()
	}()
	r := <-done
	if r.panic != nil {
		panic(r.panic)
	}
	return r.v, r.err
}

// read returns the representation of the request with id, as agent sees it.
func (h *Handler) read(ctx context.Context, agent approvals.Agent, id string) (wire.Request, error) {
	req, err := h.svc.Get(ctx, agent, id)
	if err != nil {
		return wire.Request{}, err
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

// answerView answers 200 with the representation of req, or the error of
// the call that returned it.
func (h *Handler) answerView(w http.ResponseWriter, r *http.Request, req store.Request, err error) int {
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	view, err := viewOf(r.Context(), h.svc, req)
	if err != nil {
		return h.writeServiceError(w, r, err)
	}
	return writeJSON(w, http.StatusOK, view)
}

func (h *Handler) cancel(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	req, err := h.svc.Cancel(r.Context(), agent, r.PathValue("ref"))
	return h.answerView(w, r, req, err)
}

func (h *Handler) redrive(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	req, err := h.svc.Redrive(r.Context(), agent, r.PathValue("ref"), h.agents.Load().hasCallback)
	return h.answerView(w, r, req, err)
}
