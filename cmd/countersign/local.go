package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The local run: what serve fills in when it starts without COUNTERSIGN_CONFIG,
// so that `go run ./cmd/countersign serve` shows the whole loop on a machine
// with Go alone.
const (
	localListen    = "127.0.0.1:8080"
	localAgent     = "local-agent"
	localTool      = "demo.refund"
	localTokenFile = "local-agent-token"
	storeFile      = "countersign.db"
	// sandboxPath is where serve mounts the built-in sandbox provider that the
	// demo tool dispatches to.
	sandboxPath = "/sandbox"
	// defaultInboxReviewer is who decides through the inbox unless
	// COUNTERSIGN_INBOX_REVIEWER names someone else.
	defaultInboxReviewer = "local:reviewer"
)

// dataDir is where the embedded store and the local agent token live:
// COUNTERSIGN_DATA_DIR, else the platform's per-user data directory.
func dataDir(getenv func(string) string) (string, error) {
	if d := getenv("COUNTERSIGN_DATA_DIR"); d != "" {
		return d, nil
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" && runtime.GOOS != "openbsd" {
		base, err := os.UserConfigDir() // ~/Library/Application Support, %AppData%
		if err != nil {
			return "", fmt.Errorf("finding a data directory (set COUNTERSIGN_DATA_DIR): %w", err)
		}
		return filepath.Join(base, "countersign"), nil
	}
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "countersign"), nil
	}
	home := getenv("HOME")
	if home == "" {
		// An empty environment (env -i, a bare container or unit) still
		// has a user: its home directory from the password database.
		if u, err := user.Current(); err == nil && u.HomeDir != "" && u.HomeDir != "/" {
			home = u.HomeDir
		}
	}
	if home == "" {
		return "", errors.New("neither COUNTERSIGN_DATA_DIR nor HOME is set, and the user has no home directory, so there is nowhere to keep the embedded store")
	}
	return filepath.Join(home, ".local", "share", "countersign"), nil
}

// localAgentToken returns the local agent's bearer token, created on first
// use and kept in the data directory so that a pasted curl keeps working
// across restarts. It is readable by its owner only.
func localAgentToken(dir string) (string, error) {
	path := filepath.Join(dir, localTokenFile)
	raw, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(raw))) >= 32 {
		return strings.TrimSpace(string(raw)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("reading the local agent token: %w", err)
	}
	token := "cs_local_" + randomString(24)
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing the local agent token: %w", err)
	}
	return token, nil
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// withLocal returns a copy of c, for a run without a file, with one agent,
// the demo tool dispatching to the sandbox served at base, and a dispatch
// secret of its own, then the usual defaults. The demo tool's approver is
// whoever decides in the inbox.
func (c *Config) withLocal(base, token string) *Config {
	d := *c
	sum := sha256.Sum256([]byte(token))
	d.File.Agents = []AgentConfig{{Name: localAgent, TokenSHA256: StringOrList{hex.EncodeToString(sum[:])}}}
	d.File.Tools = map[string]ToolConfig{localTool: {
		Approvers:   []string{c.InboxReviewer},
		Dispatch:    DispatchConfig{Method: "POST", URL: base + sandboxPath + "/refunds", Timeout: 5 * time.Second},
		KeyAware:    true,
		Verify:      &EndpointConfig{URL: base + sandboxPath + "/objects?key={key}"},
		MaxAttempts: 5,
		// Short enough that a local reviewer sees expiry happen.
		RequestTTL:  time.Hour,
		ApprovalTTL: time.Hour,
		Description: "Refund an order, in cents, through the built-in sandbox provider: nothing real is paid out.",
	}}
	if d.DispatchSecret == "" {
		d.DispatchSecret = randomString(32)
	}
	return d.withDefaults()
}

// printLocalBanner tells the person at the terminal how to use the local run.
// It prints the local agent's token on purpose: it only opens this machine's
// sandbox, and the curl below needs it. It prints the inbox's entry link
// (empty when the inbox is off), which works once.
func printLocalBanner(w io.Writer, base, storePath, token, inboxURL string) {
	inbox := inboxURL + "\n                (works once, in one browser; restart serve for a new link)"
	if inboxURL == "" {
		inbox = "off (COUNTERSIGN_INBOX=off)"
	}
	store := storePath + " (embedded; set COUNTERSIGN_DATABASE_URL for PostgreSQL)"
	if storePath == "PostgreSQL" {
		store = "PostgreSQL (COUNTERSIGN_DATABASE_URL)"
	}
	fmt.Fprintf(w, `
countersign is running locally (no COUNTERSIGN_CONFIG).
  store:        %s
  review inbox: %s
  agent token:  %s
  demo tool:    %s, dispatching to the built-in sandbox at %s%s

Post an intent, then approve it in the inbox:

curl -s %s/v1/requests -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"run_id": "run-1", "step": 1, "tool": "%s", "effect": {"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}, "summary": "Refund 12.50 EUR on ord_1001", "reason": "parcel lost in transit"}'

`, store, inbox, token, localTool, base, sandboxPath, base, token, localTool)
}
