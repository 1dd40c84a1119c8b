package hook

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/requestid"
	"github.com/countersign/countersign/wire"
)

// statusParked is what a handler returns when it parked its connection:
// the answer, its status, its metrics and its log line come later.
const statusParked = -1

// parkedReadTimeout bounds a parked poll's re-read, which no client's
// going away can cut short.
const parkedReadTimeout = 30 * time.Second

// parkedPoll is one long-poll whose connection is parked: what its
// re-reads and its answer need, and nothing more. No goroutine runs for it
// while it waits.
type parkedPoll struct {
	h     *Handler
	conn  net.Conn
	agent approvals.Agent // re-reads see what the agent sees, no more
	id    string          // the request's id
	since int64
	// deadline is the end of its ?wait=; start when it arrived.
	deadline, start time.Time
	requestID       string // its Request-Id
	path            string // for its log line
	timer           *time.Timer
	unsubscribe     func()
	work            context.Context // from parking.begin: ends if shutdown runs out of time
	leave           func()          // from parking.begin: called once answered

	token uint32 // its key among the watched hang-ups

	mu       sync.Mutex
	reading  bool // a goroutine reads for it now
	again    bool // woken while it read: read once more
	gone     bool // the client went away: nothing to answer
	answered bool
}

// canPark reports whether a long-poll on w can be parked: HTTP/1.x whose
// connection can be taken, under ServeHTTP (sw), with a notifier that can
// call. Anything else (HTTP/2, a recorder, the in-process MCP transport)
// waits on its own goroutine, as waitForChange does.
func (h *Handler) canPark(w http.ResponseWriter, r *http.Request) (*statusWriter, bool) {
	sw, ok := w.(*statusWriter)
	if !ok || r.ProtoMajor != 1 || h.parking.notifier == nil {
		return nil, false
	}
	for inner := sw.ResponseWriter; ; {
		if _, ok := inner.(http.Hijacker); ok {
			return sw, true
		}
		u, ok := inner.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil, false
		}
		inner = u.Unwrap()
	}
}

// waitParked answers as waitForChange does, from the same reads; when the
// long-poll must wait, it takes the connection from the HTTP server, parks
// it and returns statusParked. When the connection cannot be taken, it
// waits as waitForChange does.
func (h *Handler) waitParked(sw *statusWriter, r *http.Request, agent approvals.Agent, ref string, wait time.Duration, since int64) int {
	ctx := r.Context()
	req, err := h.svc.Get(ctx, agent, ref)
	if err != nil {
		return h.writeServiceError(sw, r, err)
	}
	p := &parkedPoll{h: h, agent: agent, id: req.ID, since: since, deadline: time.Now().Add(wait), start: sw.start,
		requestID: requestid.From(ctx), path: r.URL.Path}
	// Subscribed before the first read, so no change after it is missed;
	// a wake before the poll is parked makes it read again once parked.
	p.reading = true
	p.unsubscribe = h.parking.notifier.OnChange(req.ID, p.wake)
	view, err := h.read(ctx, agent, req.ID)
	if err != nil {
		p.unsubscribe()
		return h.writeServiceError(sw, r, err)
	}
	if p.since < 0 {
		p.since = view.Version
	}
	if !p.waits(view) {
		p.unsubscribe()
		return writeJSON(sw, http.StatusOK, view)
	}
	work, leave, ok := h.parking.begin()
	if !ok { // shutting down: answer now
		p.unsubscribe()
		return writeJSON(sw, http.StatusOK, view)
	}
	p.work, p.leave = work, leave
	// Bytes the client sent after its request (a pipelined request) go
	// with the connection, which the answer closes: a client that
	// pipelines sends again what a closed connection left unanswered
	// (RFC 9112, 9.3.2).
	conn, _, err := http.NewResponseController(sw).Hijack()
	if err != nil {
		leave()
		p.unsubscribe()
		v, err := h.waitForChange(ctx, agent, req.ID, time.Until(p.deadline), p.since)
		if err != nil {
			return h.writeServiceError(sw, r, err)
		}
		return writeJSON(sw, http.StatusOK, v)
	}
	p.conn = conn
	sw.parked = true
	h.metrics.Waiting.Inc()
	h.metrics.Parked.Inc()
	stopping := h.parking.add(p)
	h.parking.hangups.watch(p)
	p.timer = time.AfterFunc(time.Until(p.deadline), p.wake)
	p.mu.Lock()
	p.again = p.again || stopping
	p.mu.Unlock()
	p.release()
	return statusParked
}

// waits reports whether the poll still waits after reading view: the
// request unsettled, its version not past since, time left and parking
// not stopped.
func (p *parkedPoll) waits(view wire.Request) bool {
	return waitsPast(&view, p.since) && time.Now().Before(p.deadline) && !p.h.parking.isStopping()
}

// wake is called on a change to the request, at the deadline and when
// parking stops: it starts a goroutine to re-read, unless one reads
// already, which then reads once more. It never blocks: the notifier
// calls it holding its lock.
func (p *parkedPoll) wake() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.answered:
	case p.reading:
		p.again = true
	default:
		p.reading = true
		go p.run()
	}
}

// hangUp is called once the client closed its side of the connection: the
// poll ends unanswered, as a request whose client went away does.
func (p *parkedPoll) hangUp() {
	p.mu.Lock()
	p.gone = true
	p.mu.Unlock()
	p.wake()
}

// release ends a read that left the poll waiting: it parks, or reads again
// if it was woken meanwhile.
func (p *parkedPoll) release() {
	p.mu.Lock()
	again := p.again
	p.again = false
	p.reading = again
	p.mu.Unlock()
	if again {
		go p.run()
	}
}

// run re-reads until the poll parks again or is answered.
func (p *parkedPoll) run() {
	p.mu.Lock()
	gone := p.gone
	p.mu.Unlock()
	if gone {
		p.finish(499)
		return
	}
	view, err := p.read()
	if err == nil && p.waits(view) {
		p.release()
		return
	}
	p.answer(view, err)
}

// read re-reads the request as the agent sees it; a panic is an error.
func (p *parkedPoll) read() (view wire.Request, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("re-reading a parked long-poll: panic: %v", v)
		}
	}()
	ctx, cancel := context.WithTimeout(p.context(), parkedReadTimeout)
	defer cancel()
	return p.h.read(ctx, p.agent, p.id)
}

// context carries the poll's Request-Id into its reads and log lines.
func (p *parkedPoll) context() context.Context {
	return requestid.With(p.work, p.requestID)
}

// answer writes the poll's response as the normal path would, then
// finishes it.
func (p *parkedPoll) answer(view wire.Request, err error) {
	resp := newConnResponse(p.requestID)
	var status int
	if err != nil {
		r := (&http.Request{Method: http.MethodGet, URL: &url.URL{Path: p.path}}).WithContext(p.context())
		status = p.h.writeServiceError(resp, r, err)
	} else {
		status = writeJSON(resp, http.StatusOK, view)
	}
	if err := resp.writeTo(p.conn); err != nil {
		status = 499 // the client went away
	}
	p.finish(status)
}

// finish closes the poll's connection and ends its wait, and counts and
// logs the request once, with the status it answered.
func (p *parkedPoll) finish(status int) {
	p.mu.Lock()
	p.answered = true
	p.mu.Unlock()
	p.timer.Stop()
	p.unsubscribe()
	h := p.h
	h.parking.hangups.forget(p)
	p.conn.Close()
	h.metrics.Waiting.Dec()
	h.metrics.Parked.Dec()
	h.parking.done(p)
	took := time.Since(p.start)
	h.metrics.HTTPDuration.WithLabelValues("get", strconv.Itoa(status)).Observe(took.Seconds())
	h.logRequest(p.context(), http.MethodGet, p.path, status, took)
}
