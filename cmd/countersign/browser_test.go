package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/countersign/countersign/internal/browsertest"
)

// The README's first command in a real browser: serve with no configuration
// and no database, an agent's curl, the card in the inbox, Approve, the write
// at the built-in sandbox, and the key looked up.
func TestBrowserLocalRun(t *testing.T) {
	t.Parallel()
	browser := browsertest.New(t, 30*time.Second)
	dir := t.TempDir()
	base, out := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATA_DIR": dir,
		"COUNTERSIGN_LISTEN":   "127.0.0.1:0",
	}))
	token, err := os.ReadFile(filepath.Join(dir, localTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	post, _ := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(
		`{"run_id": "run-browser", "step": 1, "tool": "demo.refund", "effect": {"order": "ord_2002", "amount_cents": 990, "currency": "EUR"}, "summary": "Refund 9.90 EUR on ord_2002"}`))
	post.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	post.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	var req struct{ ID, Key string }
	err = json.NewDecoder(resp.Body).Decode(&req)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST = %d, %v", resp.StatusCode, err)
	}

	card := "#card-" + req.ID
	browser.Do("opening the inbox", chromedp.Navigate(inboxEntry(t, out)), chromedp.WaitVisible(chromedp.CSS(card)))
	browser.Do("approving",
		chromedp.Click(chromedp.CSS(card+` input[name="confirm"]`)),
		chromedp.Click(chromedp.CSS(card+" button.approve")),
		chromedp.WaitVisible(chromedp.CSS("#notice")),
	)
	browser.PollText(".exec-state", 15*time.Second, func(s string) bool { return s == "succeeded" })
	browser.Screenshot("local-run-succeeded.png")

	// The sandbox holds the write under the request's key.
	objects, err := http.Get(base + "/sandbox/objects?key=" + req.Key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(objects.Body)
	objects.Body.Close()
	if objects.StatusCode != http.StatusOK || !strings.Contains(string(body), req.Key) {
		t.Fatalf("the sandbox answers %d %s for the key\n%s", objects.StatusCode, body, out.String())
	}

	browser.Do("looking the order up",
		chromedp.SetValue(chromedp.CSS("#q"), "ord_2002"),
		chromedp.Click(chromedp.CSS("#lookup")),
		chromedp.WaitVisible(chromedp.CSS("code.full-key")),
	)
	if found := browser.Text("reading the lookup", "code.full-key"); found != req.Key {
		t.Fatalf("the lookup shows key %q, want %q", found, req.Key)
	}
}
