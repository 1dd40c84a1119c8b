package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
)

// The local run: what serve fills in when it starts without COUNTERSIGN_CONFIG,
// so that `go run ./cmd/countersign serve` shows the whole loop on a machine
// with Go alone.
const (
	localAgent     = "local-agent"
	localTool      = "demo.refund"
	localTokenFile = "local-agent-token"
	storeFile      = "countersign.db"
	// sandboxPath is where serve mounts the built-in sandbox provider that the
	// demo tool dispatches to.
	sandboxPath = "/sandbox"
)

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
func withLocal(c *config.Config, base, token string) *config.Config {
	d := *c
	sum := sha256.Sum256([]byte(token))
	d.File.Agents = []config.AgentConfig{{Name: localAgent, TokenSHA256: config.StringOrList{hex.EncodeToString(sum[:])}}}
	d.File.Tools = map[string]config.ToolConfig{localTool: {
		Approvers:   []string{c.InboxReviewer},
		Dispatch:    config.DispatchConfig{Method: "POST", URL: base + sandboxPath + "/refunds", Timeout: 5 * time.Second},
		KeyAware:    true,
		Verify:      &config.EndpointConfig{URL: base + sandboxPath + "/objects?key={key}"},
		MaxAttempts: 5,
		// Short enough that a local reviewer sees expiry happen.
		RequestTTL:  time.Hour,
		ApprovalTTL: time.Hour,
		Description: "Refund an order, in cents, through the built-in sandbox provider: nothing real is paid out.",
		// A schema, so that MCP lists the demo tool as a typed tool of its
		// own (request_demo_refund) besides request_write.
		EffectSchema: &config.EffectSchemaConfig{Inline: demoEffectSchema()},
	}}
	if d.DispatchSecret == "" {
		d.DispatchSecret = randomString(32)
	}
	return d.WithDefaults()
}

// demoEffectSchema is the demo tool's effect schema: the refund the
// banner's curl asks for.
func demoEffectSchema() map[string]any {
	return map[string]any{
		"type":                 "object",
		"required":             []any{"order", "amount_cents", "currency"},
		"additionalProperties": false,
		"properties": map[string]any{
			"order":        map[string]any{"type": "string", "minLength": 1, "maxLength": 64, "description": "the order to refund, e.g. ord_1001"},
			"amount_cents": map[string]any{"type": "integer", "minimum": 1, "description": "the amount to refund, in cents"},
			"currency":     map[string]any{"type": "string", "pattern": "^[A-Z]{3}$", "description": "ISO 4217 code, e.g. EUR"},
		},
		"examples": []any{map[string]any{"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}},
	}
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

Post an intent, then approve it in the inbox (or from code, on this data directory:
countersign approve KEY):

curl -s %s/v1/requests -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' -d '{"run_id": "run-1", "step": 1, "tool": "%s", "effect": {"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}, "summary": "Refund 12.50 EUR on ord_1001", "reason": "parcel lost in transit"}'

`, store, inbox, token, localTool, base, sandboxPath, base, token, localTool)
}

// printConfiguredBanner is printLocalBanner for a run with a configuration
// file and the inbox on, on the embedded store or with a local: reviewer:
// the person at the terminal gets the inbox's entry link and a curl in
// plain text, whatever the log format, as with the demo. The file holds
// only the agents' token hashes, so the curl reads the token from
// $COUNTERSIGN_TOKEN (countersign init printed it); nothing secret is
// printed.
func printConfiguredBanner(w io.Writer, cfg *config.Config, base, storePath, inboxURL string) {
	store := storePath + " (embedded)"
	if storePath == "PostgreSQL" {
		store = "PostgreSQL (COUNTERSIGN_DATABASE_URL)"
	}
	names := slices.Sorted(maps.Keys(cfg.File.Tools))
	var tools strings.Builder
	for i, name := range names {
		t := cfg.File.Tools[name]
		if i > 0 {
			tools.WriteString("\n                ")
		}
		if t.Execute == approvals.ExecuteAgent {
			fmt.Fprintf(&tools, "%s, performed by the agent with its receipt", name)
		} else {
			fmt.Fprintf(&tools, "%s, sent to %s", name, t.Dispatch.URL)
		}
	}
	if len(names) == 0 {
		tools.WriteString("none")
	}
	approve := "approve it in the inbox"
	if len(localReviewers(cfg)) > 0 {
		approve += " (or from code, on this data directory: countersign approve KEY)"
	}
	fmt.Fprintf(w, `
countersign is running with %s.
  store:        %s
  review inbox: %s
                (works once, in one browser; restart serve for a new link)
  tools:        %s

`, cfg.ConfigPath, store, inboxURL, tools.String())
	tool, effect := bannerExample(cfg, names)
	if tool == "" {
		return
	}
	fmt.Fprintf(w, `Post an intent with an agent's token in COUNTERSIGN_TOKEN, then %s:

curl -s %s/v1/requests -H "Authorization: Bearer $COUNTERSIGN_TOKEN" -H 'Content-Type: application/json' -d '{"run_id": "run-1", "step": 1, "tool": "%s", "effect": %s}'

`, approve, base, tool, strings.ReplaceAll(effect, "'", `'\''`))
}

// bannerExample is the tool the banner's curl asks for, and its effect: a
// tool countersign sends before one the agent performs, and one whose
// inline effect schema gives an example before one without ({}).
func bannerExample(cfg *config.Config, names []string) (tool, effect string) {
	best := -1
	for _, name := range names {
		t := cfg.File.Tools[name]
		score := 0
		if t.Execute != approvals.ExecuteAgent {
			score += 2
		}
		example := "{}"
		if t.EffectSchema != nil {
			if list, ok := t.EffectSchema.Inline["examples"].([]any); ok && len(list) > 0 {
				if raw, err := json.Marshal(list[0]); err == nil {
					example, score = string(raw), score+1
				}
			}
		}
		if score > best {
			best, tool, effect = score, name, example
		}
	}
	return tool, effect
}
