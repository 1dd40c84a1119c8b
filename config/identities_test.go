package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Approvers, tiers, escalate_to and owners take every scheme of identity,
// and a Slack id written with its scheme reaches the review service bare,
// as a click reports it: slack:U1 approves as U1 does.
func TestConfigTakesIdentitiesWithASchemeAndHandsThemOnPrinted(t *testing.T) {
	t.Parallel()
	file := `agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    owners: [slack:U0OWNER, email:owner@example.com]
tools:
  billing.credit:
    approvers: [slack:U1, U2, slack:S0FINANCE, local:ana, teams:2F1C3A4B-5D6E-4F70-8A9B-0C1D2E3F4A5B, email:cfo@example.com, oidc:248289761001]
    approvals: 2
    tiers:
      - when: {field: currency, in: [EUR]}
        approvals: 1
        approvers: [slack:W0LEAD]
    remind_after: 1h
    escalate_after: 2h
    escalate_to: [slack:S0ONCALL]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`
	if problems := loadProblems(t, file, nil); problems != nil {
		t.Fatalf("problems: %v", problems)
	}
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path}))
	if err != nil {
		t.Fatal(err)
	}
	tool := cfg.ReviewTools()["billing.credit"]
	want := []string{"U1", "U2", "S0FINANCE", "local:ana", "teams:2f1c3a4b-5d6e-4f70-8a9b-0c1d2e3f4a5b", "email:cfo@example.com", "oidc:248289761001"}
	if !slices.Equal(tool.Approvers, want) {
		t.Errorf("approvers %v, want %v", tool.Approvers, want)
	}
	if len(tool.Tiers) != 1 || !slices.Equal(tool.Tiers[0].Approvers, []string{"W0LEAD"}) {
		t.Errorf("tiers %+v", tool.Tiers)
	}
	if !slices.Equal(tool.EscalateTo, []string{"S0ONCALL"}) {
		t.Errorf("escalate_to %v", tool.EscalateTo)
	}
	if owners := cfg.AgentOwners()["billing-agent"]; !slices.Equal(owners, []string{"U0OWNER", "email:owner@example.com"}) {
		t.Errorf("owners %v", owners)
	}
	// The file itself is left as written: config check prints it so.
	if got := cfg.File.Tools["billing.credit"].Approvers[0]; got != "slack:U1" {
		t.Errorf("the file's approver became %q", got)
	}
}

// An id of no scheme, or a Slack id spelled otherwise than Slack writes it,
// is refused wherever the file lists people; and a quorum that only a user
// group could reach is judged reachable whichever way the group is written.
func TestConfigRefusesWhatIsNoIdentity(t *testing.T) {
	t.Parallel()
	file := `agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    owners: [<@U0OWNER>]
tools:
  billing.credit:
    approvers: [u1, slack:S0FINANCE]
    approvals: 3
    tiers:
      - when: {field: currency, in: [EUR]}
        approvals: 1
        approvers: [github:ana]
    escalate_after: 2h
    escalate_to: [slack:C0CHAN]
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`
	got := strings.Join(loadProblems(t, file, nil), "\n")
	for _, want := range []string{
		`owner "<@U0OWNER>" is not a Slack user id`,
		`tools.billing.credit: approver "u1" is not a Slack user id`,
		`tools.billing.credit: tiers[0]: approver "github:ana" is not a Slack user id`,
		`tools.billing.credit: escalate_to "slack:C0CHAN" is not a Slack user id`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "could never be approved") {
		t.Errorf("a quorum with a user group was judged unreachable:\n%s", got)
	}
}
