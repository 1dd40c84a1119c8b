package surface

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// PreviewerLedger is what a Previewer reads and writes (a store.Store).
type PreviewerLedger interface {
	PreviewLedger
	RequestByID(ctx context.Context, id string) (store.Request, error)
}

// Previewer fetches each request's preview once in this process (and,
// through the ledger's claim, once across replicas), and lets whoever
// shows it (a card's post, a review page) wait for it up to the tool's
// timeout. The Deliverer has one; a review page that posts no card (the
// console, the inbox) may have its own.
type Previewer struct {
	db     PreviewerLedger
	tools  Tools
	fetch  PreviewFetcher
	logger *slog.Logger

	mu     sync.Mutex
	flight map[string]*previewFlight
	wg     sync.WaitGroup
}

// NewPreviewer returns a Previewer that asks through fetch; logger nil
// logs nothing.
func NewPreviewer(db PreviewerLedger, tools Tools, fetch PreviewFetcher, logger *slog.Logger) *Previewer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Previewer{db: db, tools: tools, fetch: fetch, logger: logger, flight: map[string]*previewFlight{}}
}

// previewFlight is one request's fetch in this process.
type previewFlight struct {
	started time.Time
	done    chan struct{}
	p       *store.Preview
}

// prefetch starts the preview of every card post among rows, so that
// the previews of one batch are asked at once: a card waits for its own
// preview at most, never for another request's.
func (ps *Previewer) prefetch(rows []store.OutboxRow) {
	if ps == nil {
		return
	}
	for _, row := range rows {
		if row.Kind == store.OutboxPostCard {
			ps.start(row.RequestID, nil)
		}
	}
}

// start returns the request's flight, starting it when none is live.
// req, when known, saves the fetch reading it.
func (ps *Previewer) start(requestID string, req *store.Request) *previewFlight {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if f, ok := ps.flight[requestID]; ok {
		return f
	}
	f := &previewFlight{started: time.Now(), done: make(chan struct{})}
	ps.flight[requestID] = f
	ps.wg.Add(1)
	go func() {
		defer ps.wg.Done()
		f.p = ps.run(f, requestID, req)
		close(f.done)
		ps.mu.Lock()
		delete(ps.flight, requestID)
		ps.mu.Unlock()
	}()
	return f
}

// Await returns the preview v shows (v.Preview, as stored, when it is
// done), asking for it when it is not and waiting at most until the
// tool's timeout after its fetch began; nil when the tool asks none. A
// preview not in by then is returned fetching: shown unavailable.
func (ps *Previewer) Await(ctx context.Context, v View) *store.Preview {
	ep := v.Tool.Preview
	if ps == nil || ep == nil || (v.Preview != nil && v.Preview.State != store.PreviewFetching) {
		return v.Preview
	}
	req := v.Request
	f := ps.start(req.ID, &req)
	t := time.NewTimer(max(0, time.Until(f.started.Add(ep.Timeout+previewGrace))))
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
	case <-ctx.Done():
	}
	select { // done, even when the timer fired too
	case <-f.done:
		if f.p != nil {
			return f.p
		}
	default:
	}
	return &store.Preview{RequestID: req.ID, State: store.PreviewFetching, Reason: "the preview did not come in time"}
}

// Wait waits for every fetch started.
func (ps *Previewer) Wait() {
	if ps != nil {
		ps.wg.Wait()
	}
}

// run fetches a request's preview unless it is recorded or another
// replica's fetch is live, and returns what stands; nil when its tool asks
// none.
func (ps *Previewer) run(f *previewFlight, requestID string, known *store.Request) *store.Preview {
	ctx, cancel := context.WithTimeout(context.Background(), approvals.MaxPreviewTimeout+previewStaleAfter)
	defer cancel()
	log := ps.logger.With(slog.String("request_id", requestID))
	var req store.Request
	if known != nil {
		req = *known
	} else {
		var err error
		if req, err = ps.db.RequestByID(ctx, requestID); err != nil {
			if !errors.Is(err, store.ErrNotFound) {
				log.Warn("reading a request for its preview", slog.String("error", err.Error()))
			}
			return nil
		}
	}
	tool, ok := ps.tools.Tool(req.Tool)
	if !ok || tool.Preview == nil {
		return nil
	}
	if p, err := ps.db.PreviewFor(ctx, requestID); err == nil && p.State != store.PreviewFetching {
		return &p
	}
	ep := *tool.Preview
	log = log.With(slog.String("key", req.Key))
	claimed, err := ps.db.ClaimPreview(ctx, store.ClaimPreviewParams{RequestID: req.ID,
		StaleBefore: time.Now().Add(-ep.Timeout - previewStaleAfter)})
	if err != nil {
		log.Warn("claiming a preview", slog.String("error", err.Error()))
		return &store.Preview{RequestID: req.ID, State: store.PreviewFailed, Reason: "the preview could not be claimed"}
	}
	if !claimed {
		// Another replica fetches it (or has): wait for its outcome as
		// long as a card would.
		until := time.Now().Add(ep.Timeout + previewGrace)
		for {
			p, err := ps.db.PreviewFor(ctx, req.ID)
			if err == nil && p.State != store.PreviewFetching {
				return &p
			}
			if time.Now().After(until) {
				return &store.Preview{RequestID: req.ID, State: store.PreviewFetching, Reason: "the preview did not come in time"}
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(previewPoll):
			}
		}
	}
	p := ps.fetchOne(ctx, ep, req)
	p.RequestID = req.ID
	recorded, err := ps.db.RecordPreview(ctx, p)
	switch {
	case err != nil:
		log.Warn("recording a preview", slog.String("error", err.Error()))
	case !recorded:
		// A replica that took the fetch over recorded first: its outcome stands.
		if stood, err := ps.db.PreviewFor(ctx, req.ID); err == nil {
			return &stood
		}
	}
	if p.State == store.PreviewFailed {
		log.Warn("preview unavailable", slog.String("reason", p.Reason))
	} else {
		log.Info("preview fetched", slog.Int("changes", len(p.Changes)), slog.Duration("took", time.Since(f.started)))
	}
	return &p
}

// fetchOne asks the endpoint, within its timeout.
func (ps *Previewer) fetchOne(ctx context.Context, ep approvals.PreviewEndpoint, req store.Request) store.Preview {
	if ps.fetch == nil {
		return store.Preview{State: store.PreviewFailed, Reason: "no preview client is configured"}
	}
	body, err := PreviewBody(req)
	if err != nil {
		return store.Preview{State: store.PreviewFailed, Reason: "the effect could not be sent: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, ep.Timeout)
	defer cancel()
	status, answer, err := ps.fetch.FetchPreview(ctx, ep, req, body, MaxPreviewBody)
	if err != nil && ctx.Err() != nil {
		return store.Preview{State: store.PreviewFailed, Reason: "the preview endpoint did not answer within " + ep.Timeout.String()}
	}
	return ParsePreview(status, answer, err)
}
