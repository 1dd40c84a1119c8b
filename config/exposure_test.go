package config

import (
	"strings"
	"testing"
)

// Beyond loopback, serve refuses the development token and any dispatch or
// callback secret shorter than 32 bytes, each at its own line with how to
// make one and without the secret; on a loopback address both still run,
// as make run and the local run need.
func TestServeBeyondLoopbackRefusesWhatTheExamplesShip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("s", minSecretBytes)
	path := writeConfig(t, `agents:
  - name: dev
    token_sha256: [9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, 461EBF6D4B05429948791EEF4C4B12032C438A092BEE97EECA46EC0BB29806A2]
    callback: {url: "https://agent.internal/cb", secret: [`+long+`, cb-short-value]}
  - name: fine
    token_sha256: 60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752
    callback: {url: "https://agent.internal/cb", secret: `+long+`}
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch:
      url: "https://provider.internal/credits"
      secret: tool-short-value
  other.tool:
    approvers: [U024BE7LH]
    dispatch: {url: "https://provider.internal/other"}
`)
	check := func(listen, dispatchSecret string) (int, string) {
		t.Helper()
		problems := validate(t, map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_LISTEN": listen,
			"COUNTERSIGN_DISPATCH_SECRET": dispatchSecret, "COUNTERSIGN_DATABASE_URL": "postgres://127.0.0.1:5432/countersign"})
		if problems != "" {
			return 1, problems
		}
		return 0, ""
	}
	for _, listen := range []string{"127.0.0.1:8080", "127.0.0.2:0", "[::1]:8080", "localhost:8080"} {
		if code, problems := check(listen, "x"); code != 0 {
			t.Errorf("on %s, exited %d:\n%s", listen, code, problems)
		}
	}
	for _, listen := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "10.0.0.5:8080", "countersign.internal:8080"} {
		code, problems := check(listen, long+",env-short-value")
		if code != 1 {
			t.Errorf("on %s, exited %d, want 1", listen, code)
			continue
		}
		beyond := "and serve listens on " + listen + ", beyond this machine: make one with openssl rand -hex 32"
		for _, want := range []string{
			`line 3, column 5: agents[0].token_sha256 is the hash of "dev-agent-token", the development token printed in the examples, and serve listens on ` + listen +
				`, beyond this machine: make one with TOKEN=$(openssl rand -hex 32), give it to the agent, and put its hash here: printf '%s' "$TOKEN" | sha256sum`,
			"line 4, column 50: agents[0].callback.secret (value 2 of 2) is shorter than 32 bytes, " + beyond,
			"line 13, column 7: tools.billing.credit.dispatch.secret is shorter than 32 bytes, " + beyond,
			"COUNTERSIGN_DISPATCH_SECRET (value 2 of 2) is shorter than 32 bytes, " + beyond,
		} {
			if !strings.Contains(problems, want) {
				t.Errorf("on %s, no %q in:\n%s", listen, want, problems)
			}
		}
		if n := strings.Count(problems, "\n") + 1; n != 4 {
			t.Errorf("on %s, %d lines, want the four problems alone:\n%s", listen, n, problems)
		}
		for _, secret := range []string{"cb-short-value", "tool-short-value", "env-short-value", long} {
			if strings.Contains(problems, secret) {
				t.Errorf("the problems hold the secret %q:\n%s", secret, problems)
			}
		}
	}
}

// The ConfigMap's placeholder for a token hash is refused wherever serve
// listens, saying how to make a token and its hash.
func TestPlaceholderTokenHashIsRefused(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "agents:\n  - name: billing-agent\n    token_sha256: "+PlaceholderHash+`
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`)
	problems := validate(t, map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
		"COUNTERSIGN_DISPATCH_SECRET": "local-dispatch-secret", "COUNTERSIGN_DATABASE_URL": "postgres://127.0.0.1:5432/countersign"})
	want := "line 3, column 5: agents[0].token_sha256 is the example's placeholder: make one with TOKEN=$(openssl rand -hex 32), give it to the agent, and put its hash here: printf '%s' \"$TOKEN\" | sha256sum"
	if !strings.Contains(problems, want) {
		t.Errorf("no %q in:\n%s", want, problems)
	}
}
