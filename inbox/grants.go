package inbox

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
)

type grantsPage struct {
	page
	Grants []approvals.Grant
	Notice *notice
}

// grantsNotice words a revocation's redirect code.
func grantsNotice(code string) *notice {
	return reviewpage.GrantsNotice(code, "None of your grants has that id.")
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
	code := reviewpage.NoticeRevoked
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = reviewpage.NoticeNoGrant
	case err != nil:
		h.refuse(w, "revoking a grant", err)
		return
	case !revoked:
		code = reviewpage.NoticeNotRevoked
	}
	http.Redirect(w, r, h.prefix+"/grants?notice="+url.QueryEscape(code), http.StatusSeeOther)
}
