package main

import (
	"strings"
	"testing"
)

const callbackTokenHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// agents[].callback is checked at start, every problem at once, and its
// secret (from the environment) never appears in what Validate says.
func TestValidateCallbacks(t *testing.T) {
	t.Parallel()
	const secret = "cb-secret-from-the-environment"
	path := writeConfig(t, `
agents:
  - {name: good, token_sha256: `+callbackTokenHash+`, callback: {url: "https://agent.internal/hooks", secret: "${CB_SECRET}"}}
  - {name: relative, token_sha256: `+callbackTokenHash+`, callback: {url: "/hooks", secret: "${CB_SECRET}"}}
  - {name: ftp, token_sha256: `+callbackTokenHash+`, callback: {url: "ftp://agent.internal/", secret: "${CB_SECRET}"}}
  - {name: nosecret, token_sha256: `+callbackTokenHash+`, callback: {url: "http://127.0.0.1:9000/cb"}}
  - {name: plain, token_sha256: `+callbackTokenHash+`}
tools:
  t: {approvers: [U1], dispatch: {url: "http://billing.internal/credits"}}
callbacks: {timeout: 5s, retry_base: 1s}
`)
	cfg, err := LoadConfig(envFrom(map[string]string{
		"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DATABASE_URL": "postgres://localhost/x",
		"COUNTERSIGN_DISPATCH_SECRET": "s", "CB_SECRET": secret,
	}))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted bad callbacks")
	}
	msg := err.Error()
	for _, want := range []string{"agents[1]: callback.url must be absolute", "agents[2]: callback.url must be http or https",
		"agents[3]: callback.secret is required"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Validate does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "agents[0]") || strings.Contains(msg, "agents[4]") {
		t.Errorf("Validate refused a good agent:\n%s", msg)
	}
	if strings.Contains(msg, secret) {
		t.Errorf("Validate names the secret")
	}
	targets := cfg.CallbackTargets()
	if len(targets) != 4 || string(targets["good"].Secret) != secret || targets["good"].URL != "https://agent.internal/hooks" {
		t.Errorf("targets = %d, good = %q", len(targets), targets["good"].URL)
	}
	for _, a := range cfg.AgentList() {
		if a.Callback != (a.Name != "plain") {
			t.Errorf("agent %s has callback %v", a.Name, a.Callback)
		}
	}
	if cfg.File.Callbacks.Timeout.Seconds() != 5 || cfg.File.Callbacks.RetryBase.Seconds() != 1 {
		t.Errorf("callbacks = %+v", cfg.File.Callbacks)
	}
}
