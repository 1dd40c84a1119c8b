package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// tokenHashOf is the token_sha256 of token.
func tokenHashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// agents[].callback is checked at start, every problem at once, and its
// secret (from the environment) never appears in what Validate says.
func TestValidateCallbacks(t *testing.T) {
	t.Parallel()
	const secret = "cb-secret-from-the-environment"
	path := writeConfig(t, `
agents:
  - {name: good, token_sha256: `+tokenHashOf("good")+`, callback: {url: "https://agent.internal/hooks", secret: "${CB_SECRET}"}}
  - {name: relative, token_sha256: `+tokenHashOf("relative")+`, callback: {url: "/hooks", secret: "${CB_SECRET}"}}
  - {name: ftp, token_sha256: `+tokenHashOf("ftp")+`, callback: {url: "ftp://agent.internal/", secret: "${CB_SECRET}"}}
  - {name: nosecret, token_sha256: `+tokenHashOf("nosecret")+`, callback: {url: "http://127.0.0.1:9000/cb"}}
  - {name: plain, token_sha256: `+tokenHashOf("plain")+`}
tools:
  t: {approvers: [U1], dispatch: {url: "http://billing.internal/credits"}}
callbacks: {timeout: 5s, retry_base: 1s}
`)
	cfg, err := Load(envFrom(map[string]string{
		"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DATABASE_URL": "postgres://localhost/x",
		"COUNTERSIGN_DISPATCH_SECRET": "s", "CB_SECRET": secret, "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
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
	if len(targets) != 4 || len(targets["good"].Secrets) != 1 || string(targets["good"].Secrets[0]) != secret || targets["good"].URL != "https://agent.internal/hooks" {
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
