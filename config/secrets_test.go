package config

import (
	"slices"
	"strings"
	"testing"
)

// Every secret that is rotated takes several values: the YAML fields a
// string or a list, the environment's variables comma-separated values.
func TestConfigTakesSeveralSecretsWhileOneIsRotated(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
slack: {channel: C0APPROVALS}
agents:
  - name: billing-agent
    token_sha256: [`+tokenHashOf("billing-old")+`, "${NEW_TOKEN_SHA256}"]
    callback: {url: "https://agent.internal/hooks", secret: [callback-old, "${CALLBACK_NEW}"]}
  - name: crm-agent
    token_sha256: `+tokenHashOf("crm")+`
    callback: {url: "https://crm.internal/hooks", secret: crm-callback}
tools:
  billing.credit:
    approvers: [U1]
    dispatch:
      url: "http://billing.internal/credits"
      secret:
        - billing-old
        - billing-new
  crm.note:
    approvers: [U1]
    dispatch: {url: "http://crm.internal/notes"}
`)
	cfg, err := Load(envFrom(map[string]string{
		"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DATABASE_URL": "postgres://x",
		"NEW_TOKEN_SHA256": tokenHashOf("billing-new"), "CALLBACK_NEW": "callback-new",
		"COUNTERSIGN_DISPATCH_SECRET": "shared-old,shared-new", "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
		"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "slack-old,slack-new",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	agents := cfg.AgentList()
	for token, want := range map[string]string{"billing-old": "billing-agent", "billing-new": "billing-agent", "crm": "crm-agent"} {
		if agent, ok := agents.Authenticate("Bearer " + token); !ok || agent.Name != want {
			t.Errorf("token %s authenticates as %q (%v), want %s", token, agent.Name, ok, want)
		}
	}
	strs := func(bs [][]byte) []string {
		var out []string
		for _, b := range bs {
			out = append(out, string(b))
		}
		return out
	}
	targets := cfg.CallbackTargets()
	if got := strs(targets["billing-agent"].Secrets); !slices.Equal(got, []string{"callback-old", "callback-new"}) {
		t.Errorf("billing-agent's callbacks are signed with %q", got)
	}
	if got := strs(targets["crm-agent"].Secrets); !slices.Equal(got, []string{"crm-callback"}) {
		t.Errorf("crm-agent's callbacks are signed with %q", got)
	}
	tools := cfg.ExecutorTools()
	if got := strs(tools["billing.credit"].Secrets); !slices.Equal(got, []string{"billing-old", "billing-new"}) {
		t.Errorf("billing.credit's dispatches are signed with %q", got)
	}
	if tools["crm.note"].Secrets != nil {
		t.Errorf("crm.note has secrets of its own: %q", tools["crm.note"].Secrets)
	}
	if got := strs(cfg.DispatchSecrets()); !slices.Equal(got, []string{"shared-old", "shared-new"}) {
		t.Errorf("COUNTERSIGN_DISPATCH_SECRET gives %q", got)
	}
	if got := cfg.SlackSigningSecrets(); !slices.Equal(got, []string{"slack-old", "slack-new"}) {
		t.Errorf("SLACK_SIGNING_SECRET gives %q", got)
	}
}

// A list written wrong is named at its line; an empty value, a token hash
// two agents share and an empty value between commas are named too, and no
// problem repeats a secret.
func TestConfigSecretListProblems(t *testing.T) {
	t.Parallel()
	file := `agents:
  - name: a
    token_sha256: []
  - name: b
    token_sha256: {old: x}
  - name: c
    token_sha256: [` + tokenHashOf("c") + `, [nested]]
  - name: d
    token_sha256: [` + tokenHashOf("d") + `, ` + tokenHashOf("shared") + `]
    callback: {url: "https://agent.internal/hooks", secret: [cb-s3cret-old, ""]}
  - name: e
    token_sha256: ` + tokenHashOf("shared") + `
  - name: f
    token_sha256: [` + tokenHashOf("f") + `, ` + tokenHashOf("f") + `]
tools:
  billing.credit:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits", secret: [billing-s3cret, ""]}
`
	got := strings.Join(loadProblems(t, file, map[string]string{
		"COUNTERSIGN_DISPATCH_SECRET": "shared-s3cret-old,,shared-s3cret-new",
		"SLACK_BOT_TOKEN":             "xoxb-1", "SLACK_SIGNING_SECRET": "slack-s3cret,",
	}), "\n")
	for _, want := range []string{
		"FILE: line 3, column 19: agents[0].token_sha256: is an empty list: give one value, or a list of them while one is rotated",
		"FILE: line 5, column 19: agents[1].token_sha256: must be one value or a list of values",
		"FILE: line 7, column 86: agents[2].token_sha256[1]: must be a single value, not a list or a mapping",
		"COUNTERSIGN_DISPATCH_SECRET holds an empty value: separate the secrets with single commas",
		"SLACK_SIGNING_SECRET holds an empty value",
		"agents[4]: a token_sha256 is also agents[3]'s, but a token identifies one agent",
		"agents[5]: token_sha256 lists the same hash twice",
		"agents[3]: callback.secret: value 2 of 2 is empty",
		"tools.billing.credit: dispatch.secret value 2 of 2 is empty",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "s3cret") {
		t.Errorf("a problem names a secret:\n%s", got)
	}
}

// A single secret is the variable's whole value, byte for byte, as before
// lists were allowed; in a list, a space around a comma is refused rather
// than signing with a secret no receiver holds.
func TestEnvironmentSecretsAreSplitAtCommasOnly(t *testing.T) {
	t.Parallel()
	single := &Config{DispatchSecret: " s3cret-from-a-file\n", SlackSigningSecret: "slack-s3cret\n"}
	if got := single.DispatchSecrets(); len(got) != 1 || string(got[0]) != " s3cret-from-a-file\n" {
		t.Errorf("a single dispatch secret gives %q", got)
	}
	if got := single.SlackSigningSecrets(); !slices.Equal(got, []string{"slack-s3cret\n"}) {
		t.Errorf("a single signing secret gives %q", got)
	}
	if errs := single.validateSecretLists(); len(errs) != 0 {
		t.Errorf("a single secret is refused: %v", errs)
	}
	spaced := &Config{DispatchSecret: "s3cret-old, s3cret-new", SlackSigningSecret: "slack-old ,slack-new"}
	var got []string
	for _, err := range spaced.validateSecretLists() {
		got = append(got, err.Error())
	}
	want := []string{
		"COUNTERSIGN_DISPATCH_SECRET: a value begins or ends with a space; write the secrets as old,new, with nothing around the commas",
		"SLACK_SIGNING_SECRET: a value begins or ends with a space; write the secrets as old,new, with nothing around the commas",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %q, want %q", got, want)
	}
}
