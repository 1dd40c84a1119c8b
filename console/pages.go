package console

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Limits of the pages.
const (
	maxQueue = 500 // pending requests read for the queue
	maxBatch = 50  // requests one batch may approve
)

// Form fields.
const (
	fieldCSRF        = "csrf"
	fieldRequestID   = "request_id"
	fieldRound       = "round"
	fieldPayloadHash = "payload_hash"
	fieldVerdict     = "verdict"
	fieldReason      = "reason"
	fieldItem        = "item" // a batch's request: id, round and payload hash
	fieldID          = "id"   // a request chosen on the queue
)

//go:embed templates/*.html
var templateFS embed.FS

var pageNames = []string{"queue", "request", "batch", "batchdone", "error", "signedout", "grants", "edit", "edited"}

var pages = func() map[string]*template.Template {
	funcs := reviewpage.Funcs(Prefix)
	funcs["structure"] = structure
	funcs["grantText"] = approvals.GrantText
	funcs["age"] = func(t time.Time) string { return approvals.DurationText(time.Since(t).Truncate(time.Minute)) }
	return reviewpage.Parse(templateFS, funcs, pageNames, "templates/change.html")
}()

// page is what the layout needs from every page.
type page struct {
	Title string
	User  string // the signed-in reviewer; "" shows no sign-out
	CSRF  string
}

func (h *Handler) page(title string, s claims) page {
	return page{Title: title, User: s.User, CSRF: s.CSRF}
}

func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	reviewpage.Render(w, h.logger, pages[name], status, data)
}

type errorPage struct {
	page
	Message string
	SignIn  bool
}

func (h *Handler) fail(w http.ResponseWriter, status int, message string) {
	h.render(w, status, "error", errorPage{page: page{Title: http.StatusText(status)}, Message: message})
}

func (h *Handler) failSignIn(w http.ResponseWriter, status int, message string) {
	h.render(w, status, "error", errorPage{page: page{Title: http.StatusText(status)}, Message: message, SignIn: true})
}

// refuse answers a store or service failure: 503 when the database is out
// of reach, else 500; the error goes to the log, not the page.
func (h *Handler) refuse(w http.ResponseWriter, doing string, err error) {
	if approvals.RefusalFor(err).Code == approvals.CodeUnavailable {
		h.logger.Warn(doing+": database unavailable", slog.String("error", err.Error()))
		w.Header().Set("Retry-After", strconv.Itoa(int(approvals.RetryAfter/time.Second)))
		h.fail(w, http.StatusServiceUnavailable, "The database is out of reach. Try again in a moment.")
		return
	}
	h.logger.Error(doing, slog.String("error", err.Error()))
	h.fail(w, http.StatusInternalServerError, "Something went wrong; it is in serve's log.")
}

const notHere = "There is no such request among those you review."

// mayReview reports whether the reviewer in ctx is among req's approvers
// (directly or through a group) under the configuration in force: the
// eligibility rule of a reject, which any approver may cast. A request of
// a tool whose surfaces leave the console out is nobody's here: the
// console neither lists nor shows nor decides it (surface.Decides).
func (h *Handler) mayReview(ctx context.Context, req store.Request, user string) (bool, error) {
	if tool, ok := h.svc.Tool(req.Tool); ok && !surface.Decides(tool, Via) {
		return false, nil
	}
	err := h.svc.MayVote(ctx, req, user, store.VerdictReject)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, approvals.ErrNotAllowed), errors.Is(err, approvals.ErrNoLongerApprover), errors.Is(err, approvals.ErrToolRemoved):
		return false, nil
	}
	return false, err
}

// card is one request as the pages show it.
type card struct {
	Request    store.Request
	Reversible bool
	Policy     string
	Progress   string
	Votes      []store.Vote
	AsksReason bool
	NeedReason bool
}

func (c card) Pending() bool { return c.Request.Status == store.RequestPending }

func (h *Handler) card(ctx context.Context, req store.Request) (card, error) {
	tool := h.svc.CurrentTools()[req.Tool]
	c := card{Request: req, Reversible: tool.Reversible, Policy: approvals.PolicyText(req.Policy, h.svc.Approvers(req), nil),
		AsksReason: tool.RejectReason.AsksReason(), NeedReason: tool.RejectReason == approvals.ReasonRequired}
	votes, err := h.db.VotesFor(ctx, req.ID, req.Round)
	if err != nil {
		return card{}, err
	}
	c.Votes = votes
	if req.Policy.Needed() > 1 || len(votes) > 0 {
		c.Progress = approvals.Progress(req.Policy, votes)
	}
	return c, nil
}

type queuePage struct {
	page
	Cards         []card
	Tool, Agent   string
	Tools, Agents []string
	// OlderThan is the age filter as chosen ("1h"), "" for any age.
	OlderThan string
	Ages      []string
}

// queue lists the pending requests the reviewer may decide, oldest first,
// filtered by tool and agent.
func (h *Handler) queue(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	pending, err := h.db.PendingRequests(ctx, maxQueue)
	if err != nil {
		h.refuse(w, "listing pending requests", err)
		return
	}
	slices.SortFunc(pending, func(a, b store.Request) int { return a.CreatedAt.Compare(b.CreatedAt) })
	p := queuePage{page: h.page("Queue", s), Tool: r.URL.Query().Get("tool"), Agent: r.URL.Query().Get("agent"), Ages: queueAges}
	var olderThan time.Duration
	if o := r.URL.Query().Get("older_than"); o != "" {
		d, err := time.ParseDuration(o)
		if err != nil || d < 0 {
			h.fail(w, http.StatusBadRequest, "The age filter is not a duration such as 1h or 30m.")
			return
		}
		olderThan, p.OlderThan = d, o
	}
	now := h.now()
	tools, agents := map[string]bool{}, map[string]bool{}
	for _, req := range pending {
		mine, err := h.mayReview(ctx, req, s.User)
		if err != nil {
			h.refuse(w, "listing pending requests", err)
			return
		}
		if !mine {
			continue
		}
		tools[req.Tool], agents[req.RequestedBy] = true, true
		if (p.Tool != "" && req.Tool != p.Tool) || (p.Agent != "" && req.RequestedBy != p.Agent) ||
			(olderThan > 0 && now.Sub(req.CreatedAt) < olderThan) {
			continue
		}
		c, err := h.card(ctx, req)
		if err != nil {
			h.refuse(w, "listing pending requests", err)
			return
		}
		p.Cards = append(p.Cards, c)
	}
	p.Tools, p.Agents = keys(tools), keys(agents)
	h.render(w, http.StatusOK, "queue", p)
}

// queueAges are the age filter's choices.
var queueAges = []string{"15m", "1h", "4h", "24h"}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type requestPage struct {
	page
	Card   card
	Detail lookup.Detail
	Notice *notice
	Change *changeView // change.go
}

// visible reads a request the reviewer may see; ok false has answered.
func (h *Handler) visible(w http.ResponseWriter, r *http.Request, s claims, ref string) (store.Request, bool) {
	req, err := h.db.RequestByRef(r.Context(), ref)
	if errors.Is(err, store.ErrNotFound) {
		h.fail(w, http.StatusNotFound, notHere)
		return store.Request{}, false
	}
	if err != nil {
		h.refuse(w, "reading a request", err)
		return store.Request{}, false
	}
	mine, err := h.mayReview(r.Context(), req, s.User)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return store.Request{}, false
	}
	if !mine {
		// The same answer as a request that does not exist: its effect,
		// and even that it exists, are its approvers' to know.
		h.fail(w, http.StatusNotFound, notHere)
		return store.Request{}, false
	}
	return req, true
}

// request shows one request: its effect as a structure, key, policy, votes
// and timeline, with Approve and Reject while it is pending.
func (h *Handler) request(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	req, ok := h.visible(w, r, s, r.PathValue("ref"))
	if !ok {
		return
	}
	d, err := lookup.Load(r.Context(), h.db, req)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	c, err := h.card(r.Context(), req)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	change, err := h.change(r.Context(), req, s.User)
	if err != nil {
		h.refuse(w, "reading a request", err)
		return
	}
	h.render(w, http.StatusOK, "request", requestPage{page: h.page(cmp.Or(req.Summary, req.Tool), s), Card: c, Detail: d,
		Notice: noticeFor(r.URL.Query().Get("notice"), d), Change: change})
}

// notice says on a page what a decision or a revocation did.
type notice = reviewpage.Notice

const (
	noticeDecided = "decided"
	noticeCounted = "counted"
	noticeRepeat  = "repeat"
)

// noticeFor words a decision's redirect code from the request as it
// stands; only the code crosses the redirect, so a link cannot inject text.
func noticeFor(code string, d lookup.Detail) *notice {
	switch code {
	case noticeDecided:
		return &notice{Level: "ok", Code: code, Message: "Your decision is recorded."}
	case noticeCounted:
		return &notice{Level: "ok", Code: code, Message: "Your approval is recorded; the request needs more approvals before it runs."}
	case noticeRepeat:
		return &notice{Level: "warn", Code: code, Message: "You already voted in this round; nothing changed."}
	case approvals.CodeInvalidRequest:
		return &notice{Level: "error", Code: code, Message: "A reject of this request needs a reason (at most 2000 characters). Nothing was recorded."}
	case approvals.CodeAlreadyDecided:
		ref := approvals.RefusalFor(&approvals.NotPendingError{Status: d.Request.Status, Decision: d.Decision})
		return &notice{Level: "warn", Code: ref.Code, Message: ref.Message}
	case approvals.CodeStaleCard, approvals.CodeNotApprover, approvals.CodeNoLongerApprover, approvals.CodeSelfApproval:
		ref, _ := approvals.RefusalByCode(code)
		return &notice{Level: "error", Code: ref.Code, Message: ref.Message}
	}
	return nil
}

// decided runs one decision through approvals.Service and returns the
// notice code that says what it did, or an error that is no refusal.
func (h *Handler) decided(ctx context.Context, d approvals.Decision) (string, error) {
	d.Via = Via
	out, err := h.svc.Decide(ctx, d)
	code := noticeDecided
	switch {
	case err != nil:
	case out.Counted:
		code = noticeCounted
	case out.Repeat:
		code = noticeRepeat
	default:
		err = out.Err()
	}
	if err != nil {
		ref := approvals.RefusalFor(err)
		if noticeFor(ref.Code, lookup.Detail{}) == nil {
			return "", err
		}
		code = ref.Code
	}
	return code, nil
}

// decide records one verdict, then shows the request with what it did.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	f := r.PostForm
	round, err := strconv.Atoi(f.Get(fieldRound))
	verdict := store.Verdict(f.Get(fieldVerdict))
	if err != nil || f.Get(fieldRequestID) == "" || f.Get(fieldPayloadHash) == "" || (verdict != store.VerdictApprove && verdict != store.VerdictReject) {
		h.fail(w, http.StatusBadRequest, "The form lacks the request, round, payload hash or verdict that a decision needs.")
		return
	}
	req, ok := h.visible(w, r, s, f.Get(fieldRequestID))
	if !ok {
		return
	}
	code, err := h.decided(r.Context(), approvals.Decision{RequestID: req.ID, Round: round, PayloadHash: f.Get(fieldPayloadHash),
		Verdict: verdict, DecidedBy: s.User, Reason: f.Get(fieldReason)})
	if err != nil {
		h.refuse(w, "console decision", err)
		return
	}
	http.Redirect(w, r, h.prefix+"/requests/"+url.PathEscape(req.ID)+"?notice="+code, http.StatusSeeOther)
}

type batchPage struct {
	page
	Cards        []card
	Irreversible int
	Skipped      int // chosen, but no longer pending or not the reviewer's
}

// batchConfirm lists exactly what a batch will approve: each request's
// effect, key, round and payload hash go into the confirming form, so a
// request whose payload changed since is refused as a stale card.
func (h *Handler) batchConfirm(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	ids := r.URL.Query()[fieldID]
	if len(ids) == 0 || len(ids) > maxBatch {
		h.fail(w, http.StatusBadRequest, fmt.Sprintf("Choose between 1 and %d requests on the queue to approve them together.", maxBatch))
		return
	}
	p := batchPage{page: h.page("Approve together", s)}
	for _, id := range dedupe(ids) {
		req, err := h.db.RequestByRef(r.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			p.Skipped++
			continue
		}
		if err != nil {
			h.refuse(w, "reading a batch", err)
			return
		}
		mine, err := h.mayReview(r.Context(), req, s.User)
		if err != nil {
			h.refuse(w, "reading a batch", err)
			return
		}
		if !mine || req.Status != store.RequestPending {
			p.Skipped++
			continue
		}
		c, err := h.card(r.Context(), req)
		if err != nil {
			h.refuse(w, "reading a batch", err)
			return
		}
		if !c.Reversible {
			p.Irreversible++
		}
		p.Cards = append(p.Cards, c)
	}
	h.render(w, http.StatusOK, "batch", p)
}

type batchResult struct {
	Request store.Request
	Notice  *notice
}

type batchDonePage struct {
	page
	Results []batchResult
}

// batchApprove approves each request the confirmation listed, each through
// the same decision path as one approval.
func (h *Handler) batchApprove(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	items := r.PostForm[fieldItem]
	if len(items) == 0 || len(items) > maxBatch {
		h.fail(w, http.StatusBadRequest, "The confirmation lists no request to approve.")
		return
	}
	type item struct {
		id, hash string
		round    int
	}
	var todo []item
	for _, it := range dedupe(items) {
		parts := strings.Split(it, " ")
		round, err := strconv.Atoi(cmp.Or(len3(parts), "x"))
		if err != nil {
			h.fail(w, http.StatusBadRequest, "The confirmation's form is not one this console wrote.")
			return
		}
		todo = append(todo, item{id: parts[0], round: round, hash: parts[2]})
	}
	p := batchDonePage{page: h.page("Approved together", s)}
	for _, it := range todo {
		req, err := h.db.RequestByRef(r.Context(), it.id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			h.refuse(w, "approving a batch", err)
			return
		}
		mine := false
		if err == nil {
			if mine, err = h.mayReview(r.Context(), req, s.User); err != nil {
				h.refuse(w, "approving a batch", err)
				return
			}
		}
		if !mine {
			p.Results = append(p.Results, batchResult{Request: store.Request{ID: it.id},
				Notice: &notice{Level: "error", Code: approvals.CodeNotFound, Message: notHere}})
			continue
		}
		code, err := h.decided(r.Context(), approvals.Decision{RequestID: req.ID, Round: it.round, PayloadHash: it.hash,
			Verdict: store.VerdictApprove, DecidedBy: s.User})
		if err != nil {
			h.refuse(w, "approving a batch", err)
			return
		}
		if code == approvals.CodeAlreadyDecided {
			if req, err = h.db.RequestByRef(r.Context(), it.id); err != nil {
				h.refuse(w, "approving a batch", err)
				return
			}
		}
		d, err := lookup.Load(r.Context(), h.db, req)
		if err != nil {
			h.refuse(w, "approving a batch", err)
			return
		}
		p.Results = append(p.Results, batchResult{Request: req, Notice: noticeFor(code, d)})
	}
	h.render(w, http.StatusOK, "batchdone", p)
}

// len3 returns a batch item's round when it has its three parts.
func len3(parts []string) string {
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return ""
	}
	return parts[1]
}

func dedupe(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// node is a JSON value as the pages show it: a scalar, or named children
// (an object's fields in their order, a list's items numbered from 1).
type node struct {
	Name   string
	Scalar string
	Kids   []node
	List   bool
}

// structure reads a snapshot into nodes; JSON that does not parse is one scalar.
func structure(raw []byte) node {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return node{Scalar: string(raw)}
	}
	return n
}

func readNode(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := node{List: t == '[', Kids: []node{}}
		for i := 1; dec.More(); i++ {
			name := strconv.Itoa(i)
			if !n.List {
				k, err := dec.Token()
				if err != nil {
					return node{}, err
				}
				name, _ = k.(string)
			}
			kid, err := readNode(dec)
			if err != nil {
				return node{}, err
			}
			kid.Name = name
			n.Kids = append(n.Kids, kid)
		}
		_, err := dec.Token() // the closing delimiter
		return n, err
	case string:
		return node{Scalar: strconv.Quote(t)}, nil
	case nil:
		return node{Scalar: "null"}, nil
	default:
		return node{Scalar: fmt.Sprint(t)}, nil
	}
}
