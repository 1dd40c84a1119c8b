package console

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/internal/browsertest"
	"github.com/countersign/countersign/store"
)

// The console in a real browser against the real provider: opening it
// goes to the provider's sign-in page, where the reviewer types their
// email and password, and back, the queue lists the
// request, its page shows the effect, and Approve decides it.
func TestBrowserSignsInAndApproves(t *testing.T) {
	browser := browsertest.New(t, 30*time.Second)
	b := setup(t)
	req := b.submit(t, toolName, "Credit 42.00 USD to inv_browser")
	b.idp.add("alice@example.com")

	row := "#row-" + req.ID
	browser.Do("signing in at the provider",
		chromedp.Navigate(b.srv.URL+Prefix+"/"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), "alice@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Submit(chromedp.CSS("#password")),
		chromedp.WaitVisible(chromedp.CSS(row)),
	)
	if who := browser.Text("reading who is signed in", "#reviewer"); who != alice {
		t.Fatalf("signed in as %q, want %q", who, alice)
	}
	browser.Screenshot("console-queue.png")
	browser.Do("opening the request",
		chromedp.Click(chromedp.CSS(row+" a")),
		chromedp.WaitVisible(chromedp.CSS("#card-"+req.ID)),
	)
	if effect := browser.Text("reading the effect", ".effect-structure"); !strings.Contains(effect, "inv_8841") {
		t.Fatalf("the request page's effect reads %q", effect)
	}
	browser.Do("approving",
		chromedp.Click(chromedp.CSS("#card-"+req.ID+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	browser.Screenshot("console-approved.png")
	if status := browser.Text("reading the status", "#status"); status != string(store.RequestApproved) {
		t.Fatalf("after Approve the status reads %q", status)
	}
	if s := b.status(t, req.ID); s != store.RequestApproved {
		t.Fatalf("the store holds %s, want approved", s)
	}
}
