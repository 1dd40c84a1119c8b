package config

import (
	"slices"
	"strings"
	"testing"
)

const emailSection = `
email:
  smtp: {addr: "smtp.example.com:587", username: countersign, password: "${SMTP_PASSWORD}", from: "countersign@example.com"}
  link_base: https://countersign.example.com
`

func emailEnv(path string) map[string]string {
	return map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "SMTP_PASSWORD": "hunter2-smtp",
		"COUNTERSIGN_LISTEN": "127.0.0.1:8080"}
}

func TestEmailSurfaceConfig(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, validAgent+emailSection+`
tools:
  billing.credit:
    approvers: ["email:ana@example.com"]
    surfaces: [email]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
  notes.add:
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/notes", timeout: 5s}
`)
	cfg, err := Load(envFrom(emailEnv(path)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := cfg.File.Email.WithDefaults()
	if !e.Enabled() || e.SMTP.Password != "hunter2-smtp" || e.LinkTTL != DefaultEmailLinkTTL || e.SMTP.StartTLS != StartTLSRequired {
		t.Errorf("email = %+v", e)
	}
	if !cfg.ToolUses("billing.credit", SurfaceEmail) || cfg.ToolUses("billing.credit", SurfaceSlack) {
		t.Errorf("billing.credit goes to %v, want email alone", cfg.ToolSurfaces(cfg.File.Tools["billing.credit"]))
	}
	// Without a list: Slack when it is configured, as before the list.
	if cfg.ToolUses("notes.add", SurfaceEmail) || cfg.ToolUses("notes.add", SurfaceSlack) || cfg.ToolUses("unknown", SurfaceEmail) {
		t.Error("notes.add goes to a surface without Slack configured and without a list")
	}
	cfg.SlackBotToken = "xoxb-1"
	if got := cfg.ToolSurfaces(cfg.File.Tools["notes.add"]); !slices.Equal(got, []string{SurfaceSlack}) {
		t.Errorf("notes.add with Slack goes to %v", got)
	}

	// config check never prints the SMTP password.
	out, err := cfg.EffectiveYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2-smtp") || !strings.Contains(string(out), "password:") {
		t.Errorf("config check prints the SMTP password:\n%s", out)
	}
}

func TestEmailSurfaceConfigProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{`
email:
  smtp: {addr: "smtp.example.com", from: "countersign@example.com", starttls: never}
  link_base: http://countersign.example.com
  link_ttl: 1s
`, "email.smtp.addr"},
		{`
email:
  smtp: {addr: "smtp.example.com:587", from: "countersign@example.com", starttls: never}
  link_base: https://countersign.example.com
`, "email.smtp.starttls"},
		{`
email:
  smtp: {addr: "smtp.example.com:587", from: "countersign@example.com"}
  link_base: http://countersign.example.com
`, "email.link_base"},
		{`
email:
  smtp: {addr: "smtp.example.com:587", from: "countersign@example.com", username: u}
  link_base: https://countersign.example.com
`, "both username and password"},
		{`
email:
  smtp: {addr: "smtp.example.com:587", from: "not an address"}
  link_base: https://countersign.example.com
`, "email.smtp.from"},
		{`
email:
  smtp: {addr: "smtp.example.com:587", from: "countersign@example.com"}
  link_base: https://countersign.example.com
  link_ttl: 5s
`, "email.link_ttl"},
		{`
email:
  link_base: https://countersign.example.com
`, "set smtp.addr"},
	} {
		path := writeConfig(t, validAgent+validTool+tc.yaml)
		if got := validate(t, emailEnv(path)); !strings.Contains(got, tc.want) {
			t.Errorf("%s\nproblems = %q, want one about %s", tc.yaml, got, tc.want)
		}
	}
	for _, tc := range []struct{ surfaces, want string }{
		{"[sms]", `surfaces[0] is "sms"`},
		{"[email, email]", "lists email twice"},
		{"[slack]", "SLACK_BOT_TOKEN is not set"},
		{"[]", "surfaces is empty"},
	} {
		path := writeConfig(t, validAgent+emailSection+`
tools:
  billing.credit:
    approvers: ["email:ana@example.com"]
    surfaces: `+tc.surfaces+`
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`)
		if got := validate(t, emailEnv(path)); !strings.Contains(got, tc.want) {
			t.Errorf("surfaces %s: problems = %q, want %q", tc.surfaces, got, tc.want)
		}
	}
	// A tool on email without the email section.
	path := writeConfig(t, validAgent+`
tools:
  billing.credit:
    approvers: ["email:ana@example.com"]
    surfaces: [email]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`)
	if got := validate(t, emailEnv(path)); !strings.Contains(got, "the email section has no smtp.addr") {
		t.Errorf("problems = %q", got)
	}
}

func TestTeamsSurfaceConfig(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, validAgent+`
teams:
  app_id: 00000000-0000-0000-0000-000000000001
  app_password: "${TEAMS_APP_PASSWORD}"
  conversations:
    billing.credit: "19:billing@thread.tacv2"
tools:
  billing.credit:
    approvers: ["teams:6a1f0c4e-0000-0000-0000-00000000000a"]
    surfaces: [teams]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`)
	env := emailEnv(path)
	env["TEAMS_APP_PASSWORD"] = "hunter2-teams"
	cfg, err := Load(envFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tc := cfg.File.Teams.WithDefaults()
	if !tc.Enabled() || tc.AppPassword != "hunter2-teams" || tc.OpenIDMetadata != DefaultTeamsOpenIDMetadata || tc.ServiceURL != DefaultTeamsServiceURL {
		t.Errorf("teams = %+v", tc)
	}
	if !cfg.ToolUses("billing.credit", SurfaceTeams) || tc.Conversation("billing.credit") != "19:billing@thread.tacv2" || tc.Conversation("notes.add") != "" {
		t.Errorf("billing.credit goes to %v in %q", cfg.ToolSurfaces(cfg.File.Tools["billing.credit"]), tc.Conversation("billing.credit"))
	}
	out, err := cfg.EffectiveYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hunter2-teams") || !strings.Contains(string(out), "app_password:") {
		t.Errorf("config check prints the Teams app password:\n%s", out)
	}
}

func TestTeamsSurfaceConfigProblems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{`
teams:
  app_password: x
`, "teams: set app_id"},
		{`
teams:
  app_id: a
  openid_metadata: http://login.example.com/meta
tools:
  billing.credit:
    approvers: [U024BE7LH]
    surfaces: [teams]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`, "teams.openid_metadata"},
		{`
teams:
  app_id: a
  app_password: x
tools:
  billing.credit:
    approvers: [U024BE7LH]
    surfaces: [teams]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`, "teams.conversations has no conversation"},
		{`
tools:
  billing.credit:
    approvers: [U024BE7LH]
    surfaces: [teams]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`, "the teams section has no app_id"},
	} {
		path := writeConfig(t, validAgent+tc.yaml)
		cfg, err := Load(envFrom(emailEnv(path)))
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config\n%s\ngives %v, want an error naming %q", tc.yaml, err, tc.want)
		}
	}
}

// console is a surface name: a tool may list it (with the console
// configured), and a tool without a list goes to Slack and the console
// when both are configured, so the console keeps showing every tool.
func TestConsoleSurfaceConfig(t *testing.T) {
	t.Parallel()
	env := func(yaml string) map[string]string {
		m := emailEnv(writeConfig(t, validAgent+yaml))
		m["SLACK_BOT_TOKEN"], m["SLACK_SIGNING_SECRET"], m["CONSOLE_SECRET"] = "xoxb-1", "signing", "client-secret"
		return m
	}
	cfg, err := Load(envFrom(env(validConsole + `
tools:
  billing.credit:
    channel: C0BILLING
    approvers: [U024BE7LH, "oidc:alice@example.com"]
    surfaces: [slack, console]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
  notes.add:
    channel: C0BILLING
    approvers: [U024BE7LH]
    dispatch: {method: POST, url: "http://127.0.0.1:9/notes", timeout: 5s}
  payroll.change:
    channel: C0BILLING
    approvers: [U024BE7LH]
    surfaces: [slack]
    dispatch: {method: POST, url: "http://127.0.0.1:9/payroll", timeout: 5s}
`)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string][]string{
		"billing.credit": {SurfaceSlack, SurfaceConsole},
		"notes.add":      {SurfaceSlack, SurfaceConsole},
		"payroll.change": {SurfaceSlack},
	} {
		if got := cfg.ToolSurfaces(cfg.File.Tools[tool]); !slices.Equal(got, want) {
			t.Errorf("%s goes to %v, want %v", tool, got, want)
		}
	}
	if !cfg.ToolUses("billing.credit", SurfaceConsole) || cfg.ToolUses("payroll.change", SurfaceConsole) {
		t.Error("ToolUses disagrees with the surfaces lists on the console")
	}

	// Listed without the console configured: refused, naming the tool.
	cfg, err = Load(envFrom(env(`
tools:
  billing.credit:
    channel: C0BILLING
    approvers: [U024BE7LH]
    surfaces: [slack, console, pager]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`)))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	for _, want := range []string{"tools.billing.credit.surfaces lists console, but the console section is not configured",
		`tools.billing.credit.surfaces[2] is "pager": use slack, teams, email or console`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want %q", err, want)
		}
	}
}
