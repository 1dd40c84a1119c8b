package inbox

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
)

// Decision form fields: what a Slack button's value carries, plus the verdict
// the button stands for.
const (
	fieldRequestID   = "request_id"
	fieldRound       = "round"
	fieldPayloadHash = "payload_hash"
	fieldVerdict     = "verdict"
	fieldReason      = "reason"
	// fieldGrant is, on "Approve + allow similar", the grant's length in
	// seconds.
	fieldGrant = "grant"
)

// maxGrant bounds the grant a form may ask for; the tool's max_ttl is the
// rule, checked by the service.
const maxGrant = 366 * 24 * time.Hour

// notice is the message a page shows after a decision or a revocation.
type notice = reviewpage.Notice

// Codes of a decision's redirect that recorded a vote: it decided the
// round, it was counted towards the policy, or the reviewer had voted.
const (
	noticeDecided = "decided"
	noticeCounted = "counted"
	noticeRepeat  = "repeat"
	// noticeGranted: the approval decided the round and created a standing
	// grant; noticeGrantRefused: the grant asked for cannot be made.
	noticeGranted      = "granted"
	noticeGrantRefused = "grant_refused"
)

// noticeFor returns the notice a decision's redirect carries as its code,
// worded from the request as it stands, or nil for a code that is no notice.
// Only the code crosses the redirect, so the page needs no state on the
// server and a link cannot inject text.
func noticeFor(code string, d lookup.Detail) *notice {
	var ref approvals.Refusal
	switch code {
	case noticeDecided:
		return &notice{Level: "ok", Code: code, Message: "Your decision is recorded."}
	case noticeCounted:
		return &notice{Level: "ok", Code: code, Message: "Your approval is recorded; the request needs more approvals before it runs."}
	case noticeRepeat:
		return &notice{Level: "warn", Code: code, Message: "You already voted in this round; nothing changed."}
	case noticeGranted:
		return &notice{Level: "ok", Code: code, Message: "Your decision is recorded, and similar writes are allowed for a while: see Grants to end it."}
	case noticeGrantRefused:
		return &notice{Level: "error", Code: code, Message: "This request cannot allow similar writes: its tool has no standing grants, " +
			"the duration is over the tool's max_ttl, or its round needs more than one approval. Nothing was recorded; approve it alone."}
	case approvals.CodeInvalidRequest:
		return &notice{Level: "error", Code: code, Message: "A reject of this request needs a reason (at most 2000 characters). Nothing was recorded."}
	case approvals.CodeAlreadyDecided:
		ref = approvals.RefusalFor(&approvals.NotPendingError{Status: d.Request.Status, Decision: d.Decision})
	case approvals.CodeStaleCard, approvals.CodeNotApprover, approvals.CodeNoLongerApprover, approvals.CodeSelfApproval:
		ref, _ = approvals.RefusalByCode(code)
	default:
		return nil // decide redirects with no other code
	}
	level := "error"
	if ref.Code == approvals.CodeAlreadyDecided {
		level = "warn" // the click changed nothing, and the decision stands
	}
	return &notice{Level: level, Code: ref.Code, Message: ref.Message}
}

// decide records a verdict through the same path as a Slack click, then
// redirects to the request page with a notice saying what happened.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.fail(w, http.StatusRequestEntityTooLarge, "The form is larger than a decision can be.")
			return
		}
		h.fail(w, http.StatusBadRequest, "The form could not be read.")
		return
	}
	round, err := strconv.Atoi(r.PostForm.Get(fieldRound))
	verdict := store.Verdict(r.PostForm.Get(fieldVerdict))
	var grant time.Duration
	if g := r.PostForm.Get(fieldGrant); g != "" {
		seconds, gerr := strconv.ParseInt(g, 10, 64)
		if gerr != nil || seconds <= 0 || seconds > int64(maxGrant/time.Second) {
			h.fail(w, http.StatusBadRequest, "The form's grant is not a number of seconds.")
			return
		}
		grant = time.Duration(seconds) * time.Second
	}
	d := approvals.Decision{
		RequestID: r.PostForm.Get(fieldRequestID), Round: round, PayloadHash: r.PostForm.Get(fieldPayloadHash),
		Verdict: verdict, DecidedBy: h.reviewer, Via: Via, Reason: r.PostForm.Get(fieldReason), Grant: grant,
	}
	if err != nil || d.RequestID == "" || d.PayloadHash == "" || (verdict != store.VerdictApprove && verdict != store.VerdictReject) {
		h.fail(w, http.StatusBadRequest, "The form lacks the request, round, payload hash or verdict that a decision needs.")
		return
	}
	out, err := h.svc.Decide(r.Context(), d)
	code := noticeDecided
	switch {
	case err != nil:
	case out.Counted:
		code = noticeCounted
	case out.Repeat:
		code = noticeRepeat
	case out.Grant != nil:
		code = noticeGranted
	default:
		err = out.Err()
	}
	var input *approvals.InputError
	if errors.As(err, &input) && input.Field == "/grant" {
		err, code = nil, noticeGrantRefused
	}
	if err != nil {
		ref := approvals.RefusalFor(err)
		if noticeFor(ref.Code, lookup.Detail{}) != nil {
			code = ref.Code // shown on the request page, as it stands
		} else {
			h.refuse(w, "inbox decision", err, slog.String("request_id", d.RequestID))
			return
		}
	}
	target := h.prefix + "/requests/" + url.PathEscape(d.RequestID) + "?notice=" + code
	http.Redirect(w, r, target, http.StatusSeeOther)
}
