package inbox

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

// Decision form fields: what a Slack button's value carries, plus the verdict
// the button stands for.
const (
	fieldRequestID   = "request_id"
	fieldRound       = "round"
	fieldPayloadHash = "payload_hash"
	fieldVerdict     = "verdict"
)

// notice is the message a request page shows after a decision attempt.
type notice struct {
	Level   string // "ok", "warn" or "error"
	Message string
}

// notices are keyed by the code a decision's redirect carries, so that the
// message survives the redirect without any state on the server and a link
// cannot inject text.
var notices = map[string]*notice{
	"decided":         {"ok", "Your decision is recorded."},
	"already_decided": {"warn", "This round was already decided; your click changed nothing. The standing decision is below."},
	"stale_card":      {"error", "Stale card: the request changed since that page was loaded (a new round or a different payload). Nothing was recorded; review the card below and decide again."},
	"not_allowed":     {"error", "You are not an approver for this tool. Nothing was recorded; the attempt was audited."},
	"self_approval":   {"error", "You may not approve a request made for you. Nothing was recorded; the attempt was audited."},
	"not_pending":     {"error", "This request is no longer pending (it expired or was cancelled). Nothing was recorded."},
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
	d := approvals.Decision{
		RequestID: r.PostForm.Get(fieldRequestID), Round: round, PayloadHash: r.PostForm.Get(fieldPayloadHash),
		Verdict: verdict, DecidedBy: h.reviewer, Via: Via,
	}
	if err != nil || d.RequestID == "" || d.PayloadHash == "" || (verdict != store.VerdictApprove && verdict != store.VerdictReject) {
		h.fail(w, http.StatusBadRequest, "The form lacks the request, round, payload hash or verdict that a decision needs.")
		return
	}
	out, err := h.svc.Decide(r.Context(), d)
	code := ""
	switch {
	case err == nil && out.Created:
		code = "decided"
	case err == nil:
		code = "already_decided"
	case errors.Is(err, approvals.ErrStaleCard):
		code = "stale_card"
	case errors.Is(err, approvals.ErrNotAllowed):
		code = "not_allowed"
	case errors.Is(err, approvals.ErrSelfApproval):
		code = "self_approval"
	case errors.Is(err, approvals.ErrNotPending):
		code = "not_pending"
	case errors.Is(err, store.ErrNotFound):
		h.fail(w, http.StatusNotFound, "No request has that id.")
		return
	default:
		h.failed(w, "inbox decision", err, "The decision could not be recorded just now; please try again.", slog.String("request_id", d.RequestID))
		return
	}
	target := h.prefix + "/requests/" + url.PathEscape(d.RequestID) + "?notice=" + code
	http.Redirect(w, r, target, http.StatusSeeOther)
}
