package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// validate loads the configuration from env as config check does and
// returns its problems, "" when serve would start with it.
func validate(t *testing.T, env map[string]string) string {
	t.Helper()
	cfg, err := Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		return err.Error()
	}
	return ""
}

// The example configuration runs as make run runs it, on a loopback
// address with a short secret and the development token; beyond this
// machine (the default :8080) serve refuses both, saying how to make
// one's own.
func TestLoadConfigExampleIsValid(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"COUNTERSIGN_CONFIG":          "../examples/countersign.yml",
		"COUNTERSIGN_DATABASE_URL":    "postgres://localhost/countersign",
		"COUNTERSIGN_DISPATCH_SECRET": "local-dispatch-secret",
	}
	cfg, err := Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != ":8080" {
		t.Errorf("default listen %q", cfg.Listen)
	}
	err = cfg.Validate()
	for _, want := range []string{
		`line 13, column 5: agents[0].token_sha256 is the hash of "dev-agent-token", the development token printed in the examples, and serve listens on :8080, beyond this machine: make one with TOKEN=$(openssl rand -hex 32)`,
		"COUNTERSIGN_DISPATCH_SECRET is shorter than 32 bytes, and serve listens on :8080, beyond this machine: make one with openssl rand -hex 32",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the example on :8080: no %q in:\n%v", want, err)
		}
	}
	env["COUNTERSIGN_LISTEN"] = "127.0.0.1:8080" // as make run has it
	if cfg, err = Load(envFrom(env)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the example configuration does not validate: %v", err)
	}
	tool := cfg.File.Tools["billing.credit"]
	if tool.Channel != "C0APPROVALS" || tool.ClaimTimeout != 2*time.Minute || !tool.KeyAware || tool.Dispatch.Method != "POST" {
		t.Errorf("tool = %+v", tool)
	}
	if cfg.File.Executor.ReconcileSchedule != "@every 15s" {
		t.Errorf("defaults: reconcile %q", cfg.File.Executor.ReconcileSchedule)
	}
	if agents := cfg.AgentList(); len(agents) != 1 {
		t.Fatalf("agents = %d", len(agents))
	} else if agent, ok := agents.Authenticate("Bearer dev-agent-token"); !ok || agent.Name != "billing-agent" {
		t.Errorf("the example token does not authenticate")
	}
}

func TestLoadConfigExpandsEnvironmentInValuesOnly(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
agents: [{name: a, token_sha256: "${TOKEN_HASH}"}]
tools:
  t:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits", headers: {Authorization: "Bearer ${BILLING_TOKEN}"}}
`)
	cfg, err := Load(envFrom(map[string]string{
		"COUNTERSIGN_CONFIG": path,
		"TOKEN_HASH":         strings.Repeat("ab", 32),
		// A value that would break YAML if it were pasted into the text.
		"BILLING_TOKEN": "x\"\n  evil: [",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.File.Tools["t"].Dispatch.Headers["Authorization"]; got != "Bearer x\"\n  evil: [" {
		t.Errorf("header = %q", got)
	}
	if got := cfg.File.Agents[0].TokenSHA256; len(got) != 1 || got[0] != strings.Repeat("ab", 32) {
		t.Errorf("token hash = %q", cfg.File.Agents[0].TokenSHA256)
	}
}

func TestLoadConfigRejectsUnknownKeys(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, "tools:\n  t:\n    approver: [U1]\n")
	// The file's problems are reported by Validate, with every other one.
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path}))
	if err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "tools.t.approver: unknown field; did you mean approvers?") {
		t.Fatalf("err = %v, want a complaint about the unknown key", err)
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
executor: {dispatch_schedule: "every second"}
agents: [{name: a, token_sha256: "nothex"}, {name: a, token_sha256: "`+strings.Repeat("0", 64)+`"}]
tools:
  t:
    approvers: []
    dispatch: {url: "ftp://x", method: GET, timeout: 30s}
    claim_timeout: 10s
    verify: {url: "${MISSING_VAR}"}
`)
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "SLACK_BOT_TOKEN": "xoxb-1",
		"COUNTERSIGN_INBOX": "yes", "COUNTERSIGN_INBOX_REVIEWER": "U0ANA"}))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted a broken configuration")
	}
	for _, want := range []string{
		`COUNTERSIGN_INBOX is "yes"`,
		`COUNTERSIGN_INBOX_REVIEWER "U0ANA" must start with "local:"`,
		"COUNTERSIGN_DISPATCH_SECRET is not set",
		"SLACK_SIGNING_SECRET is not",
		"${MISSING_VAR}",
		"dispatch_schedule",
		"token_sha256 must be 64 hex",
		`the name "a" is used twice`,
		"approvers is empty",
		"no channel for its cards",
		"dispatch.url must be an http or https URL",
		`dispatch.method "GET"`,
		"verify.url",
		"claim_timeout (10s) must be longer than dispatch.timeout (30s)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not report %q; it said:\n%v", want, err)
		}
	}
}

func TestAgentListCarriesAdmin(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
agents:
  - {name: billing-agent, token_sha256: "`+strings.Repeat("ab", 32)+`"}
  - {name: auditor, token_sha256: "`+strings.Repeat("cd", 32)+`", admin: true}
`)
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path}))
	if err != nil {
		t.Fatal(err)
	}
	agents := cfg.AgentList()
	if len(agents) != 2 || agents[0].Name != "billing-agent" || agents[0].Admin || agents[1].Name != "auditor" || !agents[1].Admin {
		t.Fatalf("agents = %+v, want billing-agent and the admin auditor", agents)
	}
}

func TestValidateLookupAllowed(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T, slack string) (*Config, error) {
		t.Helper()
		path := writeConfig(t, slack+`
agents: [{name: a, token_sha256: "`+strings.Repeat("ab", 32)+`"}]
tools:
  t:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits"}
`)
		cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path,
			"COUNTERSIGN_DATABASE_URL": "postgres://localhost/countersign", "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
		if err != nil {
			t.Fatal(err)
		}
		return cfg, cfg.Validate()
	}

	cfg, err := load(t, "slack: {lookup_allowed: [U024BE7LH, W0ENTERPRISE, S0SUPPORT, C0SUPPORT, G0LEGACY]}")
	if err != nil {
		t.Fatalf("valid ids refused: %v", err)
	}
	if got := cfg.File.Slack.LookupAllowed; len(got) != 5 || got[2] != "S0SUPPORT" {
		t.Errorf("lookup_allowed = %v", got)
	}
	if cfg, err := load(t, ""); err != nil || cfg.File.Slack.LookupAllowed != nil {
		t.Errorf("unset: %v, %v", cfg.File.Slack.LookupAllowed, err)
	}

	_, err = load(t, `slack: {lookup_allowed: [U024BE7LH, "local:reviewer", D0DIRECT, u0lower, "", "C 1"]}`)
	if err == nil {
		t.Fatal("Validate accepted ids that are not users, groups or channels")
	}
	for _, bad := range []string{`"local:reviewer"`, `"D0DIRECT"`, `"u0lower"`, `""`, `"C 1"`} {
		if !strings.Contains(err.Error(), "slack.lookup_allowed: "+bad+" is not") {
			t.Errorf("Validate does not report %s; it said:\n%v", bad, err)
		}
	}
	if strings.Contains(err.Error(), "U024BE7LH") {
		t.Errorf("Validate refused a user id: %v", err)
	}
	if _, err := load(t, "slack: {lookup_allowed: []}"); err == nil || !strings.Contains(err.Error(), "slack.lookup_allowed is empty") {
		t.Errorf("an empty list: %v", err)
	}

	// slack.admins, who list and revoke everyone's grants: users and
	// user groups only.
	if cfg, err := load(t, "slack: {admins: [U024BE7LH, S0ADMINS]}"); err != nil || len(cfg.File.Slack.Admins) != 2 {
		t.Errorf("admins = %v, %v", cfg.File.Slack.Admins, err)
	}
	if _, err := load(t, "slack: {admins: [C0CHANNEL]}"); err == nil || !strings.Contains(err.Error(), `slack.admins: "C0CHANNEL" is not`) {
		t.Errorf("a channel among the admins: %v", err)
	}
}

// Defaults are applied to a copy: the configuration they start from is
// left as it was read.
func TestWithDefaultsLeavesItsInputAlone(t *testing.T) {
	t.Parallel()
	in := &Config{}
	in.File.Tools = map[string]ToolConfig{"billing.credit": {Approvers: []string{"U0ANA"}}}
	out := in.WithDefaults()
	if got := out.File.Tools["billing.credit"].Dispatch.Method; got != "POST" {
		t.Errorf("defaulted method %q, want POST", got)
	}
	if in.File.Tools["billing.credit"].Dispatch.Method != "" || in.File.Executor.DispatchSchedule != "" {
		t.Errorf("WithDefaults changed its input: %+v", in.File)
	}
}

// A tool's effect_schema, inline or a file beside the configuration, is
// compiled by Validate and reaches the review service with the description.
func TestEffectSchemaInlineOrFromAFile(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
agents:
  - {name: billing-agent, token_sha256: "`+strings.Repeat("ab", 32)+`"}
tools:
  inline.tool:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/x"}
    description: Credits an invoice.
    effect_schema:
      type: object
      required: [invoice]
      properties: {invoice: {type: string, minLength: 3}}
  file.tool:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/x"}
    effect_schema: schemas/file.json
`)
	if err := os.MkdirAll(filepath.Join(filepath.Dir(path), "schemas"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "schemas", "file.json"), []byte(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_DATABASE_URL": "postgres://x/y",
		"COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tools := cfg.ReviewTools()
	inline, file := tools["inline.tool"], tools["file.tool"]
	if inline.Description != "Credits an invoice." || inline.EffectSchema == nil || file.EffectSchema == nil {
		t.Fatalf("tools = %+v", tools)
	}
	if err := inline.EffectSchema.Check([]byte(`{"invoice":"ab"}`)); err == nil || !strings.Contains(err.Error(), "/effect/invoice") {
		t.Errorf("inline schema: %v", err)
	}
	if err := file.EffectSchema.Check([]byte(`{"n":"1"}`)); err == nil || !strings.Contains(err.Error(), "/effect/n") {
		t.Errorf("file schema: %v", err)
	}
	if err := file.EffectSchema.Check([]byte(`{"n":1}`)); err != nil {
		t.Errorf("file schema refused a valid effect: %v", err)
	}
}

// A schema that does not compile, a missing file or a list stops serve with
// every problem named by its tool.
func TestEffectSchemaProblemsAreReported(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
agents:
  - {name: billing-agent, token_sha256: "`+strings.Repeat("ab", 32)+`"}
tools:
  bad.type:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/x"}
    effect_schema: {type: integr}
  no.file:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/x"}
    effect_schema: missing.json
  a.list:
    approvers: [U1]
    dispatch: {url: "http://127.0.0.1:9/x"}
    effect_schema: [type, object]
`)
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_DATABASE_URL": "postgres://x/y",
		"COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	for _, want := range []string{"tools.bad.type.effect_schema", "tools.no.file.effect_schema: reading the schema", "tools.a.list.effect_schema: must be a JSON Schema"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
}

// Reminder and escalation settings are read in Go's duration syntax and
// checked together: each before the expiry, the reminder first, and an
// escalation with someone to go to. Every problem is reported at once.
func TestConfigNudges(t *testing.T) {
	t.Parallel()
	load := func(tool string) (*Config, error) {
		t.Helper()
		path := writeConfig(t, `
agents: [{name: a, token_sha256: "`+strings.Repeat("ab", 32)+`"}]
tools:
  t:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits"}
    request_ttl: 3h
`+tool)
		cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
			"COUNTERSIGN_DATABASE_URL": "postgres://localhost/countersign"}))
		if err != nil {
			t.Fatal(err)
		}
		return cfg, cfg.Validate()
	}
	cfg, err := load(`    remind_after: 30m
    escalate_after: 2h
    escalate_to: [S0ONCALL, U0LEAD]
    escalate_adds_approvers: true
`)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.ReviewTools()["t"]
	if got.RemindAfter != 30*time.Minute || got.EscalateAfter != 2*time.Hour || len(got.EscalateTo) != 2 || !got.EscalateAddsApprovers {
		t.Errorf("review tool = %+v", got)
	}
	if !cfg.NudgesConfigured() || cfg.File.Executor.ReminderSchedule != "@every 30s" {
		t.Errorf("sweep: configured %v, schedule %q", cfg.NudgesConfigured(), cfg.File.Executor.ReminderSchedule)
	}
	if cfg, err := load(`    remind_after: 2s
`); err != nil || cfg.ReviewTools()["t"].RemindAfter != 2*time.Second {
		t.Errorf("seconds: %v", err)
	}
	if cfg, err := load(""); err != nil || cfg.NudgesConfigured() {
		t.Errorf("no nudges: configured %v, %v", cfg.NudgesConfigured(), err)
	}

	for tool, want := range map[string][]string{
		"    remind_after: 2h\n    escalate_after: 1h\n    escalate_to: [S1]\n": {"remind_after (2h0m0s) must be shorter than escalate_after (1h0m0s)"},
		"    remind_after: 3h\n":                                     {"remind_after (3h0m0s) must be shorter than request_ttl (3h0m0s)"},
		"    escalate_after: 4h\n":                                   {"escalate_after (4h0m0s) must be shorter than request_ttl", "escalate_to is empty"},
		"    escalate_to: [S1]\n    escalate_adds_approvers: true\n": {"escalate_to and escalate_adds_approvers need escalate_after"},
		"    escalate_after: 1h\n    escalate_to: [C0CHAN]\n":        {`escalate_to "C0CHAN" is not a Slack user id`},
		"    remind_after: -1m\n":                                    {"must be positive"},
		"    remind_after: soon\n":                                   {"remind_after"},
	} {
		_, err := load(tool)
		if err == nil {
			t.Errorf("%q: no error", tool)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tool, err, w)
			}
		}
	}
}
