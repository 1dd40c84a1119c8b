package inbox

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
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
	chromium := findChromium(t)
	b := setup(t)
	provider := runExecutor(t, b)
	req := b.submit(t, &intentOpts{Summary: ptr("Credit 42.00 USD to inv_browser")})

	ctx, cancel := context.WithTimeout(context.Background(), browserBudget)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 1400))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()

	card := "#card-" + req.ID
	must(t, "opening the inbox", chromedp.Do(browser,
		chromedp.Navigate(b.server.URL+DefaultPrefix+"/"),
		chromedp.WaitVisible(chromedp.CSS(card)),
	))
	title, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(card+" h2")))
	must(t, "reading the card", err)
	if !strings.Contains(title, "inv_browser") {
		t.Fatalf("the card's title is %q", title)
	}
	saveScreenshot(t, browser, "inbox-card.png")

	must(t, "approving", chromedp.Do(browser,
		chromedp.Click(chromedp.CSS(card+` input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(card+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	))
	// The page reloads itself while the write runs; read it until it settles.
	state := ""
	deadline := time.Now().Add(15 * time.Second)
	for state != string(store.ExecSucceeded) {
		if time.Now().After(deadline) {
			t.Fatalf("the request page still shows execution %q", state)
		}
		// An evaluation that lands on a reload fails; the next one reads the new page.
		state, _ = chromedp.Run(browser, chromedp.Evaluate[string](`(document.querySelector(".exec-state") || {}).textContent || ""`))
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for an event
	}
	saveScreenshot(t, browser, "inbox-request-succeeded.png")
	if n := provider.Writes(req.Key); n != 1 {
		t.Fatalf("the provider received %d writes under %s, want 1", n, req.Key)
	}
	if n := provider.ObjectsFor(req.Key); n != 1 {
		t.Fatalf("the provider holds %d objects for %s, want 1", n, req.Key)
	}

	must(t, "looking the key up", chromedp.Do(browser,
		chromedp.SetValue(chromedp.CSS("#q"), req.Key[:16]),
		chromedp.Click(chromedp.CSS("#lookup")),
		chromedp.WaitVisible(chromedp.CSS("code.full-key")),
	))
	found, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS("code.full-key")))
	must(t, "reading the lookup", err)
	if found != req.Key {
		t.Fatalf("the lookup shows key %q, want %q", found, req.Key)
	}
	saveScreenshot(t, browser, "inbox-lookup.png")
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
	ex := executor.New(executor.Config{
		DB: b.db, Secret: []byte(secret), Logger: logger,
		Tools: map[string]executor.Tool{toolName: {
			Name: toolName, Method: "POST", URL: srv.URL + "/credits", Timeout: 2 * time.Second,
			KeyAware: true, Verify: &executor.Endpoint{URL: srv.URL + "/objects?key={key}"},
			MaxAttempts: 3, ClaimTimeout: time.Minute, ApprovalTTL: time.Hour,
		}},
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	listener := store.NewListener(b.db, logger)
	go listener.Run(ctx)
	select {
	case <-listener.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not start")
	}
	wake, unsubscribe := listener.SubscribeReady()
	t.Cleanup(unsubscribe)
	go ex.Run(ctx, wake, time.Second)
	return provider
}

// findChromium returns the browser chromedp would start. A missing browser
// fails the test: skipping would hide that nothing was checked.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell", "headless_shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("Chromium is not installed, so the browser test cannot run: install it with `apt-get install -y chromium` (Debian's package) and run the tests again")
	return ""
}

// saveScreenshot writes a PNG of the whole page into the artifacts directory.
func saveScreenshot(t *testing.T, browser context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	must(t, "taking a screenshot", err)
	dir := artifactsDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// artifactsDir is COUNTERSIGN_TEST_ARTIFACTS, or artifacts/ at the
// repository root.
func artifactsDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("COUNTERSIGN_TEST_ARTIFACTS"); dir != "" {
		return dir
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "artifacts")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func must(t *testing.T, doing string, err error) {
	t.Helper()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: the browser test ran out of its %s: %v", doing, browserBudget, err)
		}
		t.Fatalf("%s: %v", doing, err)
	}
}
