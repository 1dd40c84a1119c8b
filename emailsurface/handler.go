package emailsurface

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// maxForm bounds a confirmation POST's body.
const maxForm = 16 << 10

// decideTimeout bounds a decision made from a page.
const decideTimeout = 10 * time.Second

// Handler serves the links: GET LinkPath{token} shows the confirmation
// page, POST from it decides. Mount it at LinkPath; it refuses cross-origin
// POSTs (http.CrossOriginProtection).
func (e *Email) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LinkPath+"{token}", e.confirm)
	mux.HandleFunc("POST "+LinkPath+"{token}", e.decide)
	return http.NewCrossOriginProtection().Handler(mux)
}

// page is what the page shows.
type page struct {
	Title   string
	Notice  string // why nothing was decided, or what was
	Error   bool
	Request *store.Request
	Effect  string
	Key     string
	Verdict string // "Approve" or "Reject", with the form
	Token   string
	Reason  bool // a reject asks why
	Needed  bool // the reason is required
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>{{.Title}} · countersign</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em}pre{background:#f4f4f4;padding:.8em;overflow:auto;white-space:pre-wrap}.err{color:#a00}label{display:block;margin:.6em 0 .2em}input[type=email],textarea{width:100%;font:inherit}button{font:inherit;padding:.4em 1.2em;margin-top:1em}</style>
</head><body>
<h1>{{.Title}}</h1>
{{if .Notice}}<p{{if .Error}} class="err"{{end}} id="notice">{{.Notice}}</p>{{end}}
{{with .Request}}<p><b>{{.Tool}}</b> · key <code>{{$.Key}}</code> · asked by {{.RequestedBy}}{{if .RequestedFor}} for {{.RequestedFor}}{{end}}</p>
{{if .Summary}}<p>{{.Summary}}</p>{{end}}
<pre>{{$.Effect}}</pre>{{end}}
{{if .Verdict}}<form method="post">
<input type="hidden" name="token" value="{{.Token}}">
<label for="address">To {{.Verdict}}, type the email address this message was sent to</label>
<input type="email" id="address" name="address" required autocomplete="email">
{{if .Reason}}<label for="reason">Why{{if not .Needed}} (optional){{end}}</label>
<textarea id="reason" name="reason" rows="3" maxlength="2000"{{if .Needed}} required{{end}}></textarea>{{end}}
<button type="submit" name="verdict" value="{{.Verdict}}">{{.Verdict}}</button>
</form>{{end}}
</body></html>
`))

func (e *Email) render(w http.ResponseWriter, status int, p page) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, p)
}

// open reads a link and its request: the page to show instead of the form
// when the link can decide nothing (status non-zero).
func (e *Email) open(ctx context.Context, token string) (l link, key []byte, v surface.View, status int, p page) {
	l, key, err := e.keys.check(token, e.now())
	switch {
	case errors.Is(err, errExpiredLink):
		return l, key, v, http.StatusGone, page{Title: "Link expired", Error: true,
			Notice: "This link has expired and decides nothing. Nothing changed."}
	case err != nil:
		return l, key, v, http.StatusNotFound, page{Title: "Link not valid", Error: true,
			Notice: "This link is not valid: it was changed or cut, or not made by this countersign. Nothing changed."}
	}
	v, err = surface.Load(ctx, e.cfg.Cards, e.cfg.Review, l.RequestID, l.Round)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return l, key, v, http.StatusNotFound, page{Title: "Request not found", Error: true,
			Notice: "The request this link is for is gone. Nothing changed."}
	case err != nil:
		e.log.Error("reading a link's request", "request_id", l.RequestID, "error", err.Error())
		return l, key, v, http.StatusServiceUnavailable, page{Title: "Try again", Error: true,
			Notice: "countersign could not read the request just now. Nothing changed; try again shortly."}
	}
	base := page{Request: &v.Request, Effect: effectText(v.Request.Snapshot), Key: approvals.ShortKey(v.Request.Key)}
	switch {
	case !surface.Decides(v.Tool, Name) || !e.cfg.Uses(v.Request.Tool):
		// The link outlived the tool's email surface: it shows nothing.
		return l, key, v, http.StatusNotFound, page{Title: "Not reviewed by email", Error: true,
			Notice: surface.NotReviewedHere("email").Message}
	case v.Request.Round != l.Round:
		base.Title, base.Error = "Link for an earlier round", true
		base.Notice = "The agent asked again since this message: this link was for an earlier round and decides nothing. A new message asks for the new round."
		return l, key, v, http.StatusConflict, base
	case v.Decision != nil:
		base.Title, base.Error = "Already decided", true
		base.Notice = approvals.RefusalFor(&approvals.NotPendingError{Status: v.Request.Status, Decision: v.Decision}).Message + " Nothing changed."
		return l, key, v, http.StatusConflict, base
	case v.Request.Status != store.RequestPending:
		base.Title, base.Error = "Already decided", true
		base.Notice = approvals.RefusalFor(&approvals.NotPendingError{Status: v.Request.Status}).Message
		return l, key, v, http.StatusConflict, base
	}
	return l, key, v, 0, base
}

// confirm shows what the link would decide, and the form that decides it.
// It decides nothing: mail scanners follow links.
func (e *Email) confirm(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	l, _, v, status, p := e.open(r.Context(), token)
	if status != 0 {
		e.render(w, status, p)
		return
	}
	p.Token = token
	p.Verdict = "Approve"
	p.Title = "Approve this write?"
	if l.Verdict == store.VerdictReject {
		p.Verdict, p.Title = "Reject", "Reject this write?"
		p.Reason = v.Tool.RejectReason.AsksReason()
		p.Needed = v.Tool.RejectReason == approvals.ReasonRequired
	}
	p.Notice = fmt.Sprintf("Nothing is decided until you press %s. The link works once, until %s.", p.Verdict, clock(l.Expires))
	e.render(w, http.StatusOK, p)
}

// decide casts the link's vote when the address typed is the one the link
// was sent to, through approvals.Service as a Slack click does.
func (e *Email) decide(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		e.render(w, http.StatusBadRequest, page{Title: "Not decided", Error: true, Notice: "The form could not be read. Nothing changed."})
		return
	}
	if r.PostForm.Get("token") != token {
		// Only the confirmation page's own form carries the link's token.
		e.render(w, http.StatusForbidden, page{Title: "Not decided", Error: true,
			Notice: "Decide from the page the link opens. Nothing changed."})
		return
	}
	l, key, v, status, p := e.open(r.Context(), token)
	if status != 0 {
		e.render(w, status, p)
		return
	}
	spent, err := e.guessed(r.Context(), l, false)
	if err != nil {
		e.unsure(w, l, err)
		return
	}
	if spent {
		p.Title, p.Error = "Not decided", true
		p.Notice = "This link was given the wrong address too many times, so it decides nothing now. Decide in another of your review surfaces."
		e.render(w, http.StatusTooManyRequests, p)
		return
	}
	typed := strings.TrimSpace(r.PostForm.Get("address"))
	approver := e.approverFor(v, typed)
	if typed == "" || !e.keys.matches(l, key, typed) || approver == "" {
		e.log.Warn("email link used with an address it was not sent to", "request_id", l.RequestID, "round", l.Round)
		if _, err := e.guessed(r.Context(), l, true); err != nil {
			e.unsure(w, l, err)
			return
		}
		p.Title, p.Error = "Not decided", true
		p.Notice = "That is not the address this message was sent to, so the link decides nothing. Nothing changed."
		e.render(w, http.StatusForbidden, p)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), decideTimeout)
	defer cancel()
	out, err := e.cfg.Review.Decide(ctx, approvals.Decision{
		RequestID: l.RequestID, Round: l.Round, PayloadHash: l.PayloadHash, Verdict: l.Verdict,
		DecidedBy: approver, Via: Via, Reason: r.PostForm.Get("reason"),
	})
	if err == nil {
		err = out.Err()
	}
	if err != nil {
		ref := approvals.RefusalFor(err)
		st := http.StatusConflict
		switch {
		case errors.Is(err, approvals.ErrNotAllowed), errors.Is(err, approvals.ErrSelfApproval):
			st = http.StatusForbidden
		case ref.Code == approvals.CodeUnavailable:
			st = http.StatusServiceUnavailable
		}
		p.Title, p.Error, p.Notice = "Not decided", true, ref.Message
		if ref.Code == approvals.CodeAlreadyDecided {
			p.Title = "Already decided"
		}
		e.render(w, st, p)
		return
	}
	past := "approved"
	if l.Verdict == store.VerdictReject {
		past = "rejected"
	}
	switch {
	case out.Created:
		p.Title = "Decided"
		p.Notice = fmt.Sprintf("You %s %s. The approvers will get word of the decision.", past, p.Key)
	case out.Repeat:
		p.Title = "Already voted"
		p.Notice = "You had voted in this round already: this link is used, and nothing changed. " + out.Progress()
	default:
		p.Title = "Vote counted"
		p.Notice = fmt.Sprintf("You %s %s: %s.", past, p.Key, out.Progress())
	}
	e.render(w, http.StatusOK, p)
}

// unsure answers a POST whose wrong-address count could not be read or
// written: nothing is decided, as a link that may be spent decides nothing.
func (e *Email) unsure(w http.ResponseWriter, l link, err error) {
	e.log.Error("counting an email link's wrong addresses", "request_id", l.RequestID, "error", err.Error())
	w.Header().Set("Retry-After", "2")
	e.render(w, http.StatusServiceUnavailable, page{Title: "Try again", Error: true,
		Notice: "countersign could not check this link just now. Nothing changed; try again shortly."})
}

// approverFor is the request's approver (as its policy spells it) whose
// address typed is, or "".
func (e *Email) approverFor(v surface.View, typed string) string {
	id, err := identity.ParsePerson(string(identity.Email) + ":" + typed)
	if err != nil {
		return ""
	}
	for _, a := range v.Approvers {
		if other, err := identity.ParsePerson(a); err == nil && other.Same(id) {
			return other.String()
		}
	}
	return ""
}
