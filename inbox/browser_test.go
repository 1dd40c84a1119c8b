package inbox

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/internal/browsertest"
	"github.com/countersign/countersign/store"
)

// browserBudget bounds the whole browser test, Chromium's start included.
const browserBudget = 30 * time.Second

// The whole loop in a real browser: the card is on the inbox, Approve
// dispatches the approved snapshot once through a running executor, the
// request page follows the write until it succeeds, and the lookup box finds
// the key.
func TestBrowserApprovesAndFollowsTheWrite(t *testing.T) {
	t.Parallel()
	browser := browsertest.New(t, browserBudget)
	b := setup(t)
	provider := runExecutor(t, b)
	req := b.submit(t, &approvalstest.IntentOpts{Summary: new("Credit 42.00 USD to inv_browser")})

	card := "#card-" + req.ID
	// As the person at serve's terminal does: open the printed link.
	srv := b.start(t, Options{Reviewer: reviewer})
	browser.Do("opening the inbox",
		chromedp.Navigate(srv.handler.EntryURL(srv.URL)),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	if loc, err := chromedp.Run(browser.Ctx, chromedp.Location()); err != nil || loc != srv.URL+DefaultPrefix+"/" {
		t.Fatalf("after the entry link the address is %q (%v), want the inbox without the token", loc, err)
	}
	if title := browser.Text("reading the card", card+" h2"); !strings.Contains(title, "inv_browser") {
		t.Fatalf("the card's title is %q", title)
	}
	browser.Screenshot("inbox-card.png")

	browser.Do("approving",
		chromedp.Click(chromedp.CSS(card+` input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(card+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	// The page reloads itself while the write runs.
	browser.PollText(".exec-state", 15*time.Second, func(s string) bool { return s == string(store.ExecSucceeded) })
	// The status a reader looks at first says what became of the write.
	if status := browser.Text("reading the status", "#status"); status != "approved, succeeded" {
		t.Errorf("the request page's status reads %q, want %q", status, "approved, succeeded")
	}
	browser.Screenshot("inbox-request-succeeded.png")
	if n := provider.Writes(req.Key); n != 1 {
		t.Fatalf("the provider received %d writes under %s, want 1", n, req.Key)
	}
	if n := provider.ObjectsFor(req.Key); n != 1 {
		t.Fatalf("the provider holds %d objects for %s, want 1", n, req.Key)
	}

	browser.Do("looking the key up",
		chromedp.SetValue(chromedp.CSS("#q"), req.Key[:16]),
		chromedp.Click(chromedp.CSS("#lookup")),
		chromedp.WaitVisible(chromedp.CSS("code.full-key")),
	)
	if found := browser.Text("reading the lookup", "code.full-key"); found != req.Key {
		t.Fatalf("the lookup shows key %q, want %q", found, req.Key)
	}
	browser.Screenshot("inbox-lookup.png")
}

// runExecutor dispatches approved writes to a fake provider the moment they
// are approved, as serve does: woken by the listener, with a slow poll behind it.
func runExecutor(t *testing.T, b *bundle) *providertest.Provider {
	t.Helper()
	const secret = "browser-test-secret"
	provider := providertest.New()
	provider.Secret = []byte(secret)
	srv := providertest.Start(t, provider)
	logger := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	listener, service, listening := b.db.Notifier(logger)
	if err := service.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = service.Stop(context.Background()) })
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	wake, unsubscribe := listener.SubscribeReady()
	t.Cleanup(unsubscribe)
	ex := executor.New(executor.Config{
		Wake: wake, Poll: time.Second,
		DB: b.store, Secrets: [][]byte{[]byte(secret)}, Logger: logger,
		Tools: map[string]executor.Tool{toolName: {
			Name: toolName, Method: "POST", URL: srv.URL + "/credits", Timeout: 2 * time.Second,
			KeyAware: true, Verify: &executor.Endpoint{URL: srv.URL + "/objects?key={key}"},
			MaxAttempts: 3, ClaimTimeout: time.Minute, ApprovalTTL: time.Hour,
		}},
	})
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return provider
}
