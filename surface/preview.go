package surface

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/misleading"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/internal/strictjson"
	"github.com/countersign/countersign/store"
)

// Bounds of a preview's answer (docs/CONSOLE.md, "What changes"): anything
// past them is a failed preview, and the cards say it is unavailable.
const (
	MaxPreviewBody    = 64 << 10
	MaxPreviewChanges = 100
	maxPreviewField   = 200  // characters of a changed field's name
	maxPreviewSummary = 2000 // characters of a summary
	// previewGrace is how long past its timeout a card waits for the
	// preview to be recorded (a database write), so that a preview that
	// answered in time is shown.
	previewGrace = 250 * time.Millisecond
	// previewStaleAfter is how long past its timeout a fetch still
	// counts as live on another replica; after it, the fetch is taken
	// over (its fetcher died).
	previewStaleAfter = 5 * time.Second
	previewPoll       = 50 * time.Millisecond
)

// PreviewFetcher asks a tool's preview endpoint; the HTTP call is an
// adapter's (package previewhttp), as the port imports no net/http.
type PreviewFetcher interface {
	// FetchPreview POSTs body to ep.URL, signed as a dispatch of req is
	// (Countersign-Signature with ep.Secrets, Idempotency-Key req.Key),
	// and returns the answer's status and at most limit+1 bytes of its
	// body. ctx bounds the call.
	FetchPreview(ctx context.Context, ep approvals.PreviewEndpoint, req store.Request, body []byte, limit int64) (status int, answer []byte, err error)
}

// PreviewLedger is what previews are claimed, recorded and read in (a
// store.Store).
type PreviewLedger interface {
	ClaimPreview(ctx context.Context, p store.ClaimPreviewParams) (bool, error)
	RecordPreview(ctx context.Context, p store.Preview) (bool, error)
	PreviewFor(ctx context.Context, requestID string) (store.Preview, error)
}

// PreviewBody is what a preview endpoint is sent: the write's tool, key
// and effect (the snapshot's bytes, as a dispatch sends them). Wrapped, it
// cannot pass for a dispatch of the effect.
func PreviewBody(req store.Request) ([]byte, error) {
	return json.Marshal(struct {
		Tool   string          `json:"tool"`
		Key    string          `json:"key"`
		Effect json.RawMessage `json:"effect"`
	}{req.Tool, req.Key, req.Snapshot})
}

// ParsePreview reads a preview endpoint's answer (status, body, or the
// call's error) into a ready preview, or a failed one saying why.
func ParsePreview(status int, body []byte, err error) store.Preview {
	fail := func(format string, args ...any) store.Preview {
		return store.Preview{State: store.PreviewFailed, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case err != nil:
		return fail("the preview endpoint did not answer: %s", outbound.Describe(err))
	case status < 200 || status > 299:
		return fail("the preview endpoint answered %d", status)
	case len(body) > MaxPreviewBody:
		return fail("the answer is larger than %d KiB", MaxPreviewBody>>10)
	}
	if err := strictjson.Check(body); err != nil {
		return fail("the answer is not JSON: %s", err)
	}
	if at, _, found := strictjson.FindNUL(body, ""); found {
		return fail("the answer holds U+0000 at %s", orRoot(at))
	}
	var answer struct {
		Changes *[]struct {
			Field  *string          `json:"field"`
			Before *json.RawMessage `json:"before"`
			After  *json.RawMessage `json:"after"`
		} `json:"changes"`
		Summary *string `json:"summary"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&answer); err != nil {
		return fail("the answer is not {\"changes\": [...]} or {\"summary\": \"...\"}: %s", err)
	}
	switch {
	case answer.Changes != nil && answer.Summary != nil:
		return fail("the answer has both changes and a summary")
	case answer.Summary != nil:
		s := strings.TrimSpace(*answer.Summary)
		if s == "" || utf8.RuneCountInString(s) > maxPreviewSummary {
			return fail("the summary must be 1 to %d characters", maxPreviewSummary)
		}
		return store.Preview{State: store.PreviewReady, Summary: s}
	case answer.Changes == nil:
		return fail("the answer has neither changes nor a summary")
	case len(*answer.Changes) > MaxPreviewChanges:
		return fail("the answer lists %d changes, more than %d", len(*answer.Changes), MaxPreviewChanges)
	}
	p := store.Preview{State: store.PreviewReady, Changes: []store.PreviewChange{}}
	for i, c := range *answer.Changes {
		if c.Field == nil || *c.Field == "" || utf8.RuneCountInString(*c.Field) > maxPreviewField {
			return fail("change %d: field must be 1 to %d characters", i, maxPreviewField)
		}
		change := store.PreviewChange{Field: *c.Field, Before: json.RawMessage("null"), After: json.RawMessage("null")}
		if c.Before != nil {
			change.Before = compact(*c.Before)
		}
		if c.After != nil {
			change.After = compact(*c.After)
		}
		p.Changes = append(p.Changes, change)
	}
	return p
}

func orRoot(pointer string) string {
	if pointer == "" {
		return "/"
	}
	return pointer
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// Change is what a surface shows of a request's write as a change.
type Change struct {
	// Wanted: the request has (or its tool asks) a preview.
	Wanted bool
	// Unavailable: the preview failed, or did not come in time; Reason
	// says why when it failed.
	Unavailable bool
	Reason      string
	Lines       []ChangeLine
	Summary     string
	// Findings flag the preview's text that can mislead a reviewer, as
	// an effect's are (internal/misleading).
	Findings []misleading.Finding
}

// ChangeLine is one field before and after, as text.
type ChangeLine struct{ Field, Before, After string }

// Change returns what v shows of its write as a change: its preview's
// lines or summary, or that it is unavailable. Not Wanted when the request
// has no preview and its tool asks none.
func (v View) Change() Change {
	p := v.Preview
	if p == nil {
		if v.Tool.Preview == nil {
			return Change{}
		}
		return Change{Wanted: true, Unavailable: true}
	}
	c := Change{Wanted: true}
	if p.State != store.PreviewReady {
		c.Unavailable, c.Reason = true, p.Reason
		return c
	}
	c.Summary = p.Summary
	for _, ch := range p.Changes {
		c.Lines = append(c.Lines, ChangeLine{Field: ch.Field, Before: ValueText(ch.Before), After: ValueText(ch.After)})
	}
	c.Findings = PreviewFindings(*p)
	return c
}

// ValueText is a JSON value as a reviewer reads it: a string bare, null
// (absent) as "(none)", anything else as compact JSON.
func ValueText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "(none)"
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(compact(raw))
}

// PreviewFindings flags the text of a preview that can mislead a
// reviewer: bidirectional controls, invisible characters, mixed scripts,
// at pointers into {"changes": [...], "summary": "..."}.
func PreviewFindings(p store.Preview) []misleading.Finding {
	doc, err := json.Marshal(struct {
		Changes []store.PreviewChange `json:"changes,omitempty"`
		Summary string                `json:"summary,omitempty"`
	}{p.Changes, p.Summary})
	if err != nil {
		return nil
	}
	found := misleading.Find(doc)
	for i := range found {
		found[i].Pointer = "preview" + found[i].Pointer
	}
	return found
}

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

// Text of a preview on a surface that shows one line per change.
func (l ChangeLine) String() string {
	return l.Field + ": " + l.Before + " → " + l.After
}

// Unavailability is the words a card uses for a preview it cannot show.
const Unavailability = "preview unavailable"

// PreviewReader reads a request's stored preview (store.Store does).
type PreviewReader interface {
	PreviewFor(ctx context.Context, requestID string) (store.Preview, error)
}

// PageChange is what a review page shows of req's write as a change: its
// stored preview, or, when no card surface has asked (or one is still
// asking) and ps is set, the answer ps asks or waits for as a card would,
// at most the tool's timeout.
func PageChange(ctx context.Context, db PreviewReader, ps *Previewer, req store.Request, tool approvals.Tool) (Change, error) {
	v := View{Request: req, Tool: tool}
	p, err := db.PreviewFor(ctx, req.ID)
	switch {
	case err == nil:
		v.Preview = &p
	case !errors.Is(err, store.ErrNotFound):
		return Change{}, err
	}
	if (v.Preview == nil || v.Preview.State == store.PreviewFetching) && ps != nil && tool.Preview != nil {
		v.Preview = ps.Await(ctx, v)
	}
	return v.Change(), nil
}
