package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const validConsole = `
console:
  issuer: https://idp.example.com
  client_id: countersign
  client_secret: ${CONSOLE_SECRET}
  redirect_url: https://countersign.example.com/console/callback
  groups_claim: groups
  groups:
    finance: [oidc:alice@example.com, oidc:248289761001]
`

// A configured console loads with its secret from the environment, its
// session length defaulted, and config check prints the secret redacted.
func TestConsoleConfig(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(validAgent+validTool+validConsole), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s",
		"COUNTERSIGN_DATA_DIR": t.TempDir(), "COUNTERSIGN_LISTEN": "127.0.0.1:8080", "CONSOLE_SECRET": "hunter2-client-secret"}))
	if err != nil || cfg.Validate() != nil {
		t.Fatalf("Load = %v, Validate = %v", err, cfg.Validate())
	}
	c := cfg.File.Console
	if !c.Enabled() || c.ClientSecret != "hunter2-client-secret" || c.TTL() != DefaultConsoleSessionTTL || len(c.Groups["finance"]) != 2 {
		t.Fatalf("console = %+v, TTL %v", c, c.TTL())
	}
	out, err := cfg.EffectiveYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "client_id: countersign") {
		t.Fatalf("config check prints the console's client secret, or not the console:\n%s", out)
	}

	// No console section: the console is off.
	var off ConsoleConfig
	if off.Enabled() || off.Validate() != nil {
		t.Fatalf("an empty console section is %v, %v; want off and valid", off.Enabled(), off.Validate())
	}
}

// Each problem of the console's settings is reported, naming its field.
func TestConsoleConfigProblems(t *testing.T) {
	t.Parallel()
	bad := ConsoleConfig{
		Issuer: "http://idp.example.com", RedirectURL: "https://countersign.example.com/inbox/callback",
		Groups:     map[string][]string{"finance": {"U024BE7LH", "oidc:Alice@example.com", "oidc:group:x"}, "empty": nil, "two words": {"oidc:a"}},
		SessionTTL: 30 * 24 * time.Hour,
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("a broken console validates")
	}
	for _, want := range []string{
		`console.issuer "http://idp.example.com" must be the identity provider's https URL`,
		"console.client_id is not set",
		"console.client_secret is not set",
		`console.redirect_url "https://countersign.example.com/inbox/callback" must end in /console/callback`,
		`console.groups.finance: "U024BE7LH" is not a person signed in through the console`,
		`console.groups.finance: "oidc:Alice@example.com" has upper-case letters`,
		`console.groups.finance: "oidc:group:x" is a group`,
		"console.groups.empty lists nobody",
		`console.groups: "two words" is not a group name`,
		"console.session_ttl 720h0m0s is longer than 168h0m0s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the problems lack %q:\n%s", want, err)
		}
	}
	half := ConsoleConfig{ClientID: "countersign"}
	if err := half.Validate(); err == nil || !strings.Contains(err.Error(), "console.issuer is not set") {
		t.Errorf("a console without an issuer but with a client id: %v", err)
	}
	// Through Load: the problems reach config check with the file's.
	got := loadProblems(t, validAgent+validTool+"console:\n  issuer: https://idp.example.com\n  session_ttl: 10s\n", nil)
	joined := strings.Join(got, "\n")
	for _, want := range []string{"console.client_id is not set", "console.session_ttl 10s is shorter than a minute"} {
		if !strings.Contains(joined, want) {
			t.Errorf("config check's problems lack %q:\n%s", want, joined)
		}
	}
}
