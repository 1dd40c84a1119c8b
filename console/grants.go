package console

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/reviewpage"
	"github.com/countersign/countersign/store"
)

// fieldGrant names the grant a revocation ends.
const fieldGrant = "grant"

type grantsPage struct {
	page
	Grants []approvals.Grant
	Notice *notice
}

// grantsNotice words a revocation's redirect code.
func grantsNotice(code string) *notice {
	return reviewpage.GrantsNotice(code, "There is no such live grant among those you review.")
}

// mayReviewGrant reports whether the reviewer may see and revoke g: they
// approve the request whose approval granted it, under the configuration
// in force (the rule of the queue and the request page). A grant's match
// holds values of that request's effect, which are its approvers' to know.
func (h *Handler) mayReviewGrant(r *http.Request, g approvals.Grant, user string) (bool, error) {
	req, err := h.db.RequestByRef(r.Context(), g.RequestID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return h.mayReview(r.Context(), req, user)
}

// grants lists the live standing grants on the requests the reviewer
// approves, whoever granted them, each with Revoke.
func (h *Handler) grants(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	all, err := h.svc.Grants(r.Context(), "", true)
	if err != nil {
		h.refuse(w, "listing grants", err)
		return
	}
	p := grantsPage{page: h.page("Standing grants", s), Notice: grantsNotice(r.URL.Query().Get("notice"))}
	for _, g := range all {
		mine, err := h.mayReviewGrant(r, g, s.User)
		if err != nil {
			h.refuse(w, "listing grants", err)
			return
		}
		if mine {
			p.Grants = append(p.Grants, g)
		}
	}
	h.render(w, http.StatusOK, "grants", p)
}

// revokeGrant ends a grant the reviewer may see, whoever granted it: any
// approver may take back a standing approval of writes they review. The
// store records the revocation, and by whom, in the request's audit.
func (h *Handler) revokeGrant(w http.ResponseWriter, r *http.Request) {
	s, ok := h.authorize(w, r)
	if !ok {
		return
	}
	id := r.PostForm.Get(fieldGrant)
	if id == "" || len(id) > 64 {
		h.fail(w, http.StatusBadRequest, "The form lacks the grant to revoke.")
		return
	}
	code, err := h.revoke(r, id, s.User)
	if err != nil {
		h.refuse(w, "revoking a grant", err)
		return
	}
	http.Redirect(w, r, h.prefix+"/grants?notice="+url.QueryEscape(code), http.StatusSeeOther)
}

// revoke ends grant id as user and returns the notice code of what it did.
func (h *Handler) revoke(r *http.Request, id, user string) (string, error) {
	g, err := h.db.GrantByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return reviewpage.NoticeNoGrant, nil
	}
	if err != nil {
		return "", err
	}
	mine, err := h.mayReviewGrant(r, g, user)
	if err != nil {
		return "", err
	}
	if !mine {
		// The same answer as a grant that does not exist.
		return reviewpage.NoticeNoGrant, nil
	}
	_, revoked, err := h.svc.RevokeGrant(r.Context(), id, user, true)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return reviewpage.NoticeNoGrant, nil
	case err != nil:
		return "", err
	case !revoked:
		return reviewpage.NoticeNotRevoked, nil
	}
	return reviewpage.NoticeRevoked, nil
}
