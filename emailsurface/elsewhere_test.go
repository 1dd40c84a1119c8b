package emailsurface_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/emailsurface"
	"github.com/countersign/countersign/store"
)

// A link for a request whose tool is not reviewed by email (a link made
// for it, or one that outlived the tool's email surface) shows nothing of
// the request, and its POST decides nothing.
func TestALinkForAToolNotOnEmailDecidesNothing(t *testing.T) {
	b := setup(t)
	req := b.submit("notes.add") // not on email
	link := emailsurface.LinkFor(b.email, req.ID, req.Round, req.PayloadHash, store.VerdictApprove, ana, time.Now().Add(time.Hour))
	status, page := get(t, link)
	if status != http.StatusNotFound || !strings.Contains(page, "not reviewed in email") || strings.Contains(page, "inv_") {
		t.Fatalf("GET answered %d:\n%s", status, page)
	}
	status, page = post(t, link, ana)
	if status != http.StatusNotFound || !strings.Contains(page, "not reviewed in email") {
		t.Fatalf("POST answered %d:\n%s", status, page)
	}
	b.undecided(req, 1, "a link for a tool not on email")
}
