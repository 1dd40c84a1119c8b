package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
)

const policyFile = `slack:
  channel: C0APPROVALS
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    owners: [U0OWNER]
tools:
  billing.credit:
    approvers: [U1, U2, S0FINANCE]
    approvals: 2
    reject_reason: required
    tiers:
      - when: {field: amount_cents, gt: 123456789012345678901234567890}
        approvals: 3
        approvers: [S0FINLEADS]
      - when: {field: currency, in: [EUR, GBP]}
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
`

func TestConfigReadsReviewPolicies(t *testing.T) {
	t.Parallel()
	if problems := loadProblems(t, policyFile, nil); problems != nil {
		t.Fatalf("problems: %v", problems)
	}
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(policyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_DATA_DIR": t.TempDir(),
		"COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
	if err != nil {
		t.Fatal(err)
	}
	tool := cfg.ReviewTools()["billing.credit"]
	if tool.Approvals != 2 || tool.RejectReason != approvals.ReasonRequired || len(tool.Tiers) != 2 {
		t.Fatalf("tool = %+v", tool)
	}
	// The huge constant keeps every digit: one past it matches, it does not.
	p := tool.PolicyFor([]byte(`{"amount_cents":123456789012345678901234567891}`))
	if p.Tier == nil || *p.Tier != 0 || p.Approvals != 3 || p.Approvers[0] != "S0FINLEADS" {
		t.Errorf("policy past the huge boundary = %+v", p)
	}
	if p := tool.PolicyFor([]byte(`{"amount_cents":123456789012345678901234567890}`)); p.Tier != nil || p.Approvals != 2 {
		t.Errorf("policy at the huge boundary = %+v", p)
	}
	if p := tool.PolicyFor([]byte(`{"currency":"GBP"}`)); p.Tier == nil || *p.Tier != 1 || p.Approvals != 2 || len(p.Approvers) != 3 {
		t.Errorf("policy of the second tier = %+v (it inherits the tool's approvals and approvers)", p)
	}
	if owners := cfg.AgentOwners()["billing-agent"]; len(owners) != 1 || owners[0] != "U0OWNER" {
		t.Errorf("owners = %v", owners)
	}
}

func TestConfigRefusesBadPolicies(t *testing.T) {
	t.Parallel()
	file := strings.NewReplacer(
		"gt: 123456789012345678901234567890", "gtt: 100000",
		"in: [EUR, GBP]", "gt: 1, lt: 5",
		"reject_reason: required", "reject_reason: sometimes",
		"approvers: [U1, U2, S0FINANCE]\n    approvals: 2", "approvers: [U1, U2]\n    approvals: 3",
		"owners: [U0OWNER]", "owners: [C0CHANNEL]",
	).Replace(policyFile)
	problems := strings.Join(loadProblems(t, file, nil), "\n")
	for _, want := range []string{
		"line 13, column 37: tools.billing.credit.tiers[0].when.gtt: unknown field; did you mean gt?",
		"tiers[1]: when needs exactly one of gt, gte, lt, lte, eq, ne, in; it has 2 (gt, lt)",
		`reject_reason "sometimes" must be off, optional or required`,
		"needs 3 approvals but lists only 2 approvers and no user group",
		`owner "C0CHANNEL" is not a Slack user id`,
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems lack %q:\n%s", want, problems)
		}
	}
}
