// Package browsertest drives a headless Chromium from tests with chromedp,
// and keeps screenshots as test artifacts.
package browsertest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium tab, closed when the test ends.
type Browser struct {
	Ctx    context.Context
	t      testing.TB
	budget time.Duration
}

// New starts Chromium for t; everything the test does in it must finish
// within budget. A missing Chromium fails the test: skipping would hide that
// nothing was checked.
func New(t testing.TB, budget time.Duration) *Browser {
	t.Helper()
	chromium := find(t)
	// Chromium leaves its profile and a singleton socket directory behind
	// when it is killed; both go into one directory removed after the
	// browser has exited.
	scratch, err := os.MkdirTemp("", "countersign-browser-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(filepath.Join(scratch, "profile")), chromedp.Env("TMPDIR="+scratch),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1200, 1400))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // returns once the browser process has exited
		cancel()
		if err := os.RemoveAll(scratch); err != nil {
			t.Logf("removing the browser's scratch directory: %v", err)
		}
	})
	return &Browser{Ctx: tab, t: t, budget: budget}
}

// Do runs steps, failing the test with what it was doing if they fail.
func (b *Browser) Do(doing string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.must(doing, chromedp.Do(b.Ctx, steps...))
}

// Text returns the text of the first element the CSS selector sel matches.
func (b *Browser) Text(doing, sel string) string {
	b.t.Helper()
	text, err := chromedp.Run(b.Ctx, chromedp.Text(chromedp.CSS(sel)))
	b.must(doing, err)
	return text
}

// PollText evaluates the text of sel (empty when absent) until want holds or
// the deadline passes, and returns the last text read. Pages that reload
// themselves make single reads fail now and then; the next one reads the new
// page.
func (b *Browser) PollText(sel string, within time.Duration, want func(string) bool) string {
	b.t.Helper()
	text := ""
	for deadline := time.Now().Add(within); !want(text); {
		if time.Now().After(deadline) {
			b.t.Fatalf("%s still reads %q after %s", sel, text, within)
		}
		text, _ = chromedp.Run(b.Ctx, chromedp.Evaluate[string](`(document.querySelector(`+strconv.Quote(sel)+`) || {}).textContent || ""`))
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for an event
	}
	return text
}

// Screenshot writes a PNG of the whole page into the artifacts directory.
func (b *Browser) Screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.Ctx, chromedp.FullScreenshot(100))
	b.must("taking a screenshot", err)
	dir := artifactsDir(b.t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
}

func (b *Browser) must(doing string, err error) {
	b.t.Helper()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			b.t.Fatalf("%s: the browser test ran out of its %s: %v", doing, b.budget, err)
		}
		b.t.Fatalf("%s: %v", doing, err)
	}
}

// find returns the Chromium to start.
func find(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell", "headless_shell"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("Chromium is not installed, so the browser test cannot run: install it with `apt-get install -y chromium` (Debian's package), or run scripts/test-deps, and run the tests again")
	return ""
}

// artifactsDir is COUNTERSIGN_TEST_ARTIFACTS, or artifacts/ at the
// repository root.
func artifactsDir(t testing.TB) string {
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
