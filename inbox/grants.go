package inbox

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
)

type grantsPage struct {
	page
	Grants []approvals.Grant
	Notice *notice
}

// Codes of a revocation's redirect.
const (
	noticeRevoked    = "revoked"
	noticeNotRevoked = "not_revoked"
	noticeNoGrant    = "no_grant"
)

// grantsNotice words a revocation's redirect code; nil for anything else.
func grantsNotice(code string) *notice {
	switch code {
	case noticeRevoked:
		return &notice{Level: "ok", Code: code, Message: "The grant is revoked: writes it covered ask for a decision again."}
	case noticeNotRevoked:
		return &notice{Level: "warn", Code: code, Message: "That grant had already ended; nothing changed."}
	case noticeNoGrant:
		return &notice{Level: "error", Code: code, Message: "None of your grants has that id."}
	}
	return nil
}

// grants lists the reviewer's live standing grants, each with Revoke.
func (h *Handler) grants(w http.ResponseWriter, r *http.Request) {
	grants, err := h.svc.Grants(r.Context(), h.reviewer, false)
	if err != nil {
		h.refuse(w, "listing grants", err)
		return
	}
	h.render(w, http.StatusOK, "grants", grantsPage{page: page{Title: "Grants"}, Grants: grants,
		Notice: grantsNotice(r.URL.Query().Get("notice"))})
}

// revokeGrant ends one of the reviewer's grants, then shows the list.
func (h *Handler) revokeGrant(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("id") == "" {
		h.fail(w, http.StatusBadRequest, "The form lacks the grant to revoke.")
		return
	}
	_, revoked, err := h.svc.RevokeGrant(r.Context(), r.PostForm.Get("id"), h.reviewer, false)
	code := noticeRevoked
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = noticeNoGrant
	case err != nil:
		h.refuse(w, "revoking a grant", err)
		return
	case !revoked:
		code = noticeNotRevoked
	}
	http.Redirect(w, r, h.prefix+"/grants?notice="+url.QueryEscape(code), http.StatusSeeOther)
}
