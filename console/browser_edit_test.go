package console

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/internal/browsertest"
	"github.com/countersign/countersign/store"
)

// Edit and approve in a real browser: from the request's page to the edit
// form, a changed amount, and the result naming the new request, which
// is approved while the original is settled as edited.
func TestBrowserEditsAndApproves(t *testing.T) {
	browser := browsertest.New(t, 30*time.Second)
	b := setup(t)
	req := b.submit(t, toolName, "Credit 42.00 USD to inv_browser_edit")
	b.idp.add("alice@example.com")

	browser.Do("signing in and opening the request",
		chromedp.Navigate(b.srv.URL+Prefix+"/"),
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), "alice@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Submit(chromedp.CSS("#password")),
		chromedp.WaitVisible(chromedp.CSS("#row-"+req.ID)),
		chromedp.Navigate(b.srv.URL+Prefix+"/requests/"+req.ID),
		chromedp.WaitVisible(chromedp.CSS("#card-"+req.ID)),
	)
	browser.Do("opening the edit form",
		chromedp.Click(chromedp.CSS("#edit")),
		chromedp.WaitVisible(chromedp.CSS("#edit-form")),
		chromedp.SetValue(chromedp.CSS("#field-amount_cents"), "4300"),
	)
	browser.Screenshot("console-edit.png")
	browser.Do("approving the edit",
		chromedp.Click(chromedp.CSS("#edit-approve")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	browser.Screenshot("console-edited.png")
	if status := browser.Text("reading the edit's status", "#edit-status"); status != string(store.RequestApproved) {
		t.Fatalf("the edit's status reads %q", status)
	}
	orig, err := b.store.RequestByID(t.Context(), req.ID)
	if err != nil || orig.Status != store.RequestEdited {
		t.Fatalf("the original = %s, %v; want edited", orig.Status, err)
	}
	edit, err := b.store.RequestByKey(t.Context(), orig.SupersededBy)
	if err != nil || !strings.Contains(string(edit.Snapshot), `"amount_cents":4300`) || edit.Status != store.RequestApproved {
		t.Fatalf("the edit = %s %s, %v", edit.Snapshot, edit.Status, err)
	}
}
