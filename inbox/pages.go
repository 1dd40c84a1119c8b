package inbox

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Inbox limits.
const (
	maxPending = 50 // cards on the inbox page
	maxDecided = 10 // recently decided requests on the inbox page
)

// card is what a request's card shows, as on Slack.
type card struct {
	Request    store.Request
	Reversible bool
	// Outcome is the request's status with what became of its write, when
	// the page knows it (lookup.Detail.Outcome); empty shows the status.
	Outcome string
	// Policy words the round's policy ("needs 2 approvals from …"),
	// Progress its approvals so far, StillToAct who has not voted.
	Policy     string
	Progress   string
	Votes      []store.Vote
	StillToAct []string
	// RejectReason is whether Reject asks why.
	RejectReason approvals.ReasonRule
	// GrantFor, on a tool with standing grants and a round that needs one
	// approval, is how long "Approve + allow similar" allows them ("8h"),
	// GrantSeconds the same for the form, and GrantScope what it lets
	// through; "" offers no grant.
	GrantFor     string
	GrantSeconds int64
	GrantScope   string
}

// Pending reports whether the card offers Approve and Reject.
func (c card) Pending() bool { return c.Request.Status == store.RequestPending }

// AsksReason reports whether the Reject form has a reason field.
func (c card) AsksReason() bool { return c.RejectReason.AsksReason() }

// NeedsReason reports whether that field must be filled.
func (c card) NeedsReason() bool { return c.RejectReason == approvals.ReasonRequired }

func (h *Handler) card(ctx context.Context, req store.Request) (card, error) {
	tool := h.svc.CurrentTools()[req.Tool]
	approvers := h.svc.Approvers(req)
	c := card{Request: req, Reversible: tool.Reversible, RejectReason: tool.RejectReason,
		Policy: approvals.PolicyText(req.Policy, approvers, nil)}
	if rule := tool.Grants; rule != nil && rule.MaxTTL > 0 && req.Policy.Needed() == 1 {
		c.GrantFor, c.GrantSeconds = approvals.DurationText(rule.MaxTTL), int64(rule.MaxTTL/time.Second)
		c.GrantScope = approvals.GrantScope(req, *rule)
	}
	votes, err := h.db.VotesFor(ctx, req.ID, req.Round)
	if err != nil {
		return card{}, err
	}
	c.Votes = votes
	if req.Policy.Needed() > 1 || len(votes) > 0 {
		c.Progress = approvals.Progress(req.Policy, votes)
	}
	if c.Pending() {
		for _, id := range approvers {
			if !slices.ContainsFunc(votes, func(v store.Vote) bool { return v.Voter == id }) && id != req.RequestedFor {
				c.StillToAct = append(c.StillToAct, id)
			}
		}
	}
	return c, nil
}

type inboxPage struct {
	page
	Cards []card
	// Decided is nil when the store cannot list recent decisions.
	Decided []lookup.Detail
}

// inbox shows the pending requests, newest first, and the recently decided.
func (h *Handler) inbox(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	pending, err := h.db.PendingRequests(ctx, maxPending)
	if err != nil {
		h.refuse(w, "listing pending requests", err)
		return
	}
	slices.SortFunc(pending, func(a, b store.Request) int { return b.CreatedAt.Compare(a.CreatedAt) })
	p := inboxPage{page: page{Title: "Inbox"}}
	for _, req := range pending {
		c, err := h.card(ctx, req)
		if err != nil {
			h.refuse(w, "listing pending requests", err)
			return
		}
		p.Cards = append(p.Cards, c)
	}
	if p.Decided, err = h.recentlyDecided(ctx); err != nil {
		h.refuse(w, "listing decided requests", err)
		return
	}
	h.render(w, http.StatusOK, "inbox", p)
}

// recentlyDecided loads the requests that most recently left pending.
func (h *Handler) recentlyDecided(ctx context.Context) ([]lookup.Detail, error) {
	reqs, err := h.db.RecentlyDecided(ctx, maxDecided)
	if err != nil {
		return nil, err
	}
	details := []lookup.Detail{}
	for _, req := range reqs {
		d, err := lookup.Load(ctx, h.db, req)
		if err != nil {
			return nil, err
		}
		details = append(details, d)
	}
	return details, nil
}

type requestPage struct {
	page
	Card   card
	Detail lookup.Detail
	Notice *notice
	Change *surface.Change // preview.go
}

// request shows one request: its card, its decision, its execution's
// progress and its timeline.
func (h *Handler) request(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := h.db.RequestByRef(ctx, r.PathValue("ref")) // a reviewer sees every request
	if err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	d, err := lookup.Load(ctx, h.db, req)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	c, err := h.card(ctx, req)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	p := requestPage{page: page{Title: cmp.Or(req.Summary, req.Tool)}, Card: c, Detail: d, Notice: noticeFor(r.URL.Query().Get("notice"), d)}
	if p.Change, err = h.change(ctx, req); err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	p.Card.Outcome = d.Outcome()
	p.Follow = running(d)
	h.render(w, http.StatusOK, "request", p)
}

// running reports whether an approved write has yet to settle, so its page
// should follow it.
func running(d lookup.Detail) bool {
	if d.Request.Status != store.RequestApproved {
		return false
	}
	e := d.LatestExecution()
	if e == nil {
		return true
	}
	switch e.State {
	case store.ExecReady, store.ExecClaimed, store.ExecUnknown:
		return true
	case store.ExecSucceeded, store.ExecFailed, store.ExecNeedsReview, store.ExecSuperseded:
		return false
	}
	return false
}

type lookupPage struct {
	page
	Answer lookup.Answer
	Card   *card // a detail answer's card
}

// lookup answers the lookup box as the slash command answers /countersign.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) {
	text := strings.TrimSpace(r.URL.Query().Get("q"))
	q, answer, err := lookup.Find(r.Context(), h.db, text)
	if err != nil {
		h.refuse(w, "inbox lookup", err, slog.String("kind", string(q.Kind)))
		return
	}
	p := lookupPage{page: page{Title: "Lookup", Query: text}, Answer: answer}
	if answer.Detail != nil {
		c, err := h.card(r.Context(), answer.Detail.Request)
		if err != nil {
			h.refuse(w, "inbox lookup", err)
			return
		}
		p.Card = &c
	}
	h.render(w, http.StatusOK, "lookup", p)
}

// refuse answers err with its refusal's page: 503 with Retry-After when the
// database is out of reach, 500 for an unknown failure (both logged, their
// text kept off the page), else the refusal's own status.
func (h *Handler) refuse(w http.ResponseWriter, doing string, err error, attrs ...any) {
	ref := approvals.RefusalFor(err)
	switch ref.Code {
	case approvals.CodeUnavailable:
		h.logger.Warn(doing+": database unavailable", append(attrs, slog.String("error", err.Error()))...)
		w.Header().Set("Retry-After", strconv.Itoa(int(approvals.RetryAfter/time.Second)))
	case approvals.CodeInternal:
		h.logger.Error(doing, append(attrs, slog.String("error", err.Error()))...)
	}
	h.failCode(w, hook.Status(ref.Code), ref.Code, ref.Message)
}
