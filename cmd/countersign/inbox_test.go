package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/storetest"
)

// With Slack configured the inbox is off, and serve prints no link to it;
// COUNTERSIGN_INBOX=on mounts it beside Slack, and its log then carries the
// entry link, the only way in.
func TestInboxOffWithSlackUnlessTurnedOn(t *testing.T) {
	t.Parallel()
	fake := bottest.New(t)
	sum := sha256.Sum256([]byte(smokeToken))
	env := map[string]string{
		"COUNTERSIGN_DATABASE_URL": storetest.NewURL(t),
		"COUNTERSIGN_CONFIG": writeConfig(t, fmt.Sprintf(`
slack: {channel: C0APPROVALS}
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA, local:reviewer]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:]))),
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"SLACK_BOT_TOKEN":             "xoxb-test",
		"SLACK_SIGNING_SECRET":        "s3cret",
		"COUNTERSIGN_SLACK_API_URL":   fake.URL(),
	}
	get := func(client *http.Client, url string) int {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	base, logs := startServeWith(t, envFrom(env))
	for _, path := range []string{"/inbox/", "/inbox/?token=x"} {
		if code := get(newBrowserClient(), base+path); code != http.StatusNotFound {
			t.Errorf("GET %s with Slack configured = %d, want 404", path, code)
		}
	}
	if strings.Contains(logs.String(), "/inbox/") {
		t.Errorf("serve printed an inbox link with the inbox off:\n%s", logs.String())
	}

	env["COUNTERSIGN_INBOX"] = "on"
	base, logs = startServeWith(t, envFrom(env))
	entry := inboxEntry(t, logs)
	if !strings.HasPrefix(entry, base+"/inbox/?token=") {
		t.Fatalf("entry link %s is not on %s", entry, base)
	}
	browser := newBrowserClient()
	if code := get(browser, base+"/inbox/"); code != http.StatusForbidden {
		t.Fatalf("GET /inbox/ without the link = %d, want 403", code)
	}
	enterInbox(t, browser, entry)
	if code := get(browser, base+"/inbox/"); code != http.StatusOK {
		t.Fatalf("GET /inbox/ with the session = %d, want 200", code)
	}
	if code := get(newBrowserClient(), entry); code != http.StatusForbidden {
		t.Fatalf("the entry link a second time = %d, want 403", code)
	}
}

func TestLoopbackBase(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080 true",
		"0.0.0.0:8080":   "http://127.0.0.1:8080 true",
		"[::]:8080":      "http://127.0.0.1:8080 true",
		"[::1]:8080":     "http://[::1]:8080 true",
		"10.0.0.5:8080":  "http://10.0.0.5:8080 false",
	} {
		tcp, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		base, reachable := loopbackBase(tcp)
		if got := fmt.Sprint(base, " ", reachable); got != want {
			t.Errorf("loopbackBase(%s) = %s, want %s", addr, got, want)
		}
	}
}
