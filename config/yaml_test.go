package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/identity"
)

// loadProblems loads a configuration file with env and returns Validate's
// answer, one problem per line.
func loadProblems(t *testing.T, file string, env map[string]string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_DATA_DIR": t.TempDir(),
		"COUNTERSIGN_LISTEN": "127.0.0.1:8080"}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := Load(envFrom(vars))
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	err = cfg.Validate()
	if err == nil {
		return nil
	}
	return strings.Split(strings.ReplaceAll(err.Error(), path, "FILE"), "\n")
}

const validTool = `
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`

const validAgent = `
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`

func TestConfigProblemsNameTheUsersLineAndField(t *testing.T) {
	t.Parallel()
	// ${VAR} expansion on line 5 and flow mappings must not move positions.
	file := `slack:
  channel: C0APPROVALS
agents:
  - name: billing-agent
    token_sha256: ${TOKEN_SHA}
    admn: true
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "${PROVIDER}/credits", timeout: ten}
    key_awre: true
    max_attempts: many
    reversible: maybe
    verify: [http://127.0.0.1:9/objects]
`
	got := loadProblems(t, file, map[string]string{
		"TOKEN_SHA": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"PROVIDER":  "http://127.0.0.1:9\n\n\n",
	})
	want := []string{
		"FILE: line 6, column 5: agents[0].admn: unknown field; did you mean admin?",
		`FILE: line 10, column 67: tools.billing.credit.dispatch.timeout: "ten" is not a duration; write it like 30s, 10m or 2h`,
		"FILE: line 11, column 5: tools.billing.credit.key_awre: unknown field; did you mean key_aware?",
		"FILE: line 12, column 19: tools.billing.credit.max_attempts: must be a whole number",
		"FILE: line 13, column 17: tools.billing.credit.reversible: must be true or false",
		"FILE: line 14, column 13: tools.billing.credit.verify: must be a mapping of url, headers",
	}
	if len(got) < len(want) {
		t.Fatalf("got %d problems, want at least %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], w)
		}
	}
	for _, line := range got {
		if strings.Contains(line, "main.") || strings.Contains(line, "time.Duration") {
			t.Errorf("a problem names a Go type: %s", line)
		}
	}
}

func TestConfigFileProblemsComeWithTheOthers(t *testing.T) {
	t.Parallel()
	// A YAML problem and an environment problem, reported together.
	got := loadProblems(t, validAgent+validTool+"retention: 90d\n", map[string]string{"COUNTERSIGN_INBOX": "sometimes"})
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		"FILE: line 10, column 12: retention: must be a mapping of requests, audit, schedule, verify_schedule",
		`COUNTERSIGN_INBOX is "sometimes"`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
}

func TestConfigSyntaxErrorIsReportedWithItsLine(t *testing.T) {
	t.Parallel()
	got := loadProblems(t, "slack:\n  channel: C1\nagents: [a: b: c]\n", nil)
	// The parser names the line where it lost its way, which for an
	// unclosed flow sequence is the one before.
	if len(got) == 0 || got[0] != "FILE: line 2: did not find expected ',' or ']'" {
		t.Errorf("problems = %q, want the syntax error first", got)
	}
}

func TestConfigAcceptsWhatTheDecoderAccepts(t *testing.T) {
	t.Parallel()
	file := validAgent + validTool + "    reversible: yes\n    key_aware: false\n    max_attempts: 3\n    request_ttl: 1h30m\n    verify: ~\n"
	if got := loadProblems(t, file, nil); len(got) != 0 {
		t.Errorf("a valid file has problems:\n%s", strings.Join(got, "\n"))
	}
}

// Problems found after decoding (an empty approvers list, a bad method, an
// owner that is no Slack id, a token hash that is none, a dispatch URL, a
// schedule that does not parse) name the line of their own field, or of
// the item in a list, or of the nearest field the file has.
func TestSemanticProblemsNameTheirLine(t *testing.T) {
	t.Parallel()
	got := loadProblems(t, `
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    owners: [U024BE7LH, not-a-user]
  - name: ops-agent
    admin: true
    token_sha256: not-a-hash
executor:
  expiry_schedule: "every now and then"
tools:
  billing.credit:
    channel: C0APPROVALS
    approvers: []
    dispatch:
      method: GET
      url: "ftp://127.0.0.1:9/credits"
  crm.note:
    approvers: [U024BE7LH, bob]
    claim_timeout: 5s
    dispatch: {url: "http://127.0.0.1:9/notes"}
`, nil)
	want := []string{
		`FILE: line 5, column 25: agents[0]: owner "not-a-user" is not ` + identity.Forms,
		`FILE: line 8, column 5: agents[1]: agent "ops-agent": token_sha256 must be 64 hex characters`,
		`FILE: line 10, column 3: executor.expiry_schedule "every now and then" is not a cron schedule`,
		`FILE: line 14, column 5: tools.billing.credit: approvers is empty, so nobody could approve it`,
		`FILE: line 16, column 7: tools.billing.credit: dispatch.method "GET" must be POST, PUT, PATCH or DELETE`,
		`FILE: line 17, column 7: tools.billing.credit: dispatch.url must be an http or https URL`,
		`FILE: line 19, column 28: tools.crm.note: approver "bob" is not a Slack user id`,
		`FILE: line 20, column 5: tools.crm.note: claim_timeout (5s) must be longer than dispatch.timeout (10s)`,
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(line string) bool { return strings.HasPrefix(line, w) }) {
			t.Errorf("no problem starting %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	for _, line := range got {
		if !strings.HasPrefix(line, "FILE: line ") {
			t.Errorf("a problem names no line: %q", line)
		}
	}
}

// A file that is not YAML is reported once, at its line: not followed by
// the agents and tools it would have had.
func TestAYAMLSyntaxErrorDoesNotCascade(t *testing.T) {
	t.Parallel()
	got := loadProblems(t, validAgent+"tools:\n  billing.credit:\n    approvers: [U1]\n   dispatch: {url: x}\n", nil)
	if len(got) != 1 || !strings.HasPrefix(got[0], "FILE: line ") {
		t.Errorf("problems = %q, want the syntax error alone", got)
	}
}
