package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
)

const verdictFile = `slack:
  channel: C0APPROVALS
tools:
  billing.credit:
    approvers: [U1, U2, S0FINANCE]
    tiers:
      - name: small
        when: 'effect.amount_cents <= 5000 && effect.currency == "USD"'
        approvals: 0
        notify: true
      - name: blocked
        when: {field: customer, eq: C666}
        deny: "this customer is blocked"
      - name: watch
        when: effect.amount_cents > 100000
        approvals: 0
        shadow: true
      - name: big
        when: |
          effect.amount_cents > 100000 ||
          effect.currency != "USD"
        approvals: 2
    grants: {max_ttl: 8h, match: [customer], amount: amount_cents}
    dispatch: {method: POST, url: "http://127.0.0.1:9/credits", timeout: 5s}
  billing.note:
    approvals: 0
    notify: true
    dispatch: {method: POST, url: "http://127.0.0.1:9/notes", timeout: 5s}
  billing.wipe:
    deny: "wipes go through the change board"
    dispatch: {method: POST, url: "http://127.0.0.1:9/wipe", timeout: 5s}
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`

func loadVerdictFile(t *testing.T, file string) *Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "countersign.yml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DISPATCH_SECRET": "s", "COUNTERSIGN_DATA_DIR": t.TempDir(),
		"COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("problems: %v", err)
	}
	return cfg
}

func TestConfigReadsPolicyVerdicts(t *testing.T) {
	t.Parallel()
	cfg := loadVerdictFile(t, verdictFile)
	tools := cfg.ReviewTools()
	credit := tools["billing.credit"]
	if credit.Verdict != approvals.VerdictAsk || len(credit.Tiers) != 4 {
		t.Fatalf("credit = %+v", credit)
	}
	small, blocked, watch, big := credit.Tiers[0], credit.Tiers[1], credit.Tiers[2], credit.Tiers[3]
	if small.Name != "small" || small.Verdict != approvals.VerdictAllow || !small.Notify {
		t.Errorf("small = %+v", small)
	}
	if _, isCEL := small.When.(*approvals.Expression); !isCEL {
		t.Errorf("small.When = %T, want a CEL expression", small.When)
	}
	if blocked.Verdict != approvals.VerdictDeny || blocked.Deny != "this customer is blocked" {
		t.Errorf("blocked = %+v", blocked)
	}
	if !watch.Shadow || watch.Verdict != approvals.VerdictAllow {
		t.Errorf("watch = %+v", watch)
	}
	if big.Verdict != approvals.VerdictAsk || big.Approvals != 2 {
		t.Errorf("big = %+v", big)
	}
	if g := credit.Grants; g == nil || g.MaxTTL != 8*time.Hour || len(g.Match) != 1 || g.Match[0] != "customer" || g.Amount != "amount_cents" {
		t.Errorf("grants = %+v", credit.Grants)
	}
	for _, tc := range []struct {
		effect, verdict, tier string
		approvals             int
		shadow                int
	}{
		{`{"amount_cents":4200,"currency":"USD"}`, "allow", "small", 0, 0},
		{`{"amount_cents":42.5,"currency":"USD"}`, "allow", "small", 0, 0},
		{`{"amount_cents":4200,"currency":"USD","customer":"C666"}`, "allow", "small", 0, 0},
		{`{"amount_cents":9000,"currency":"USD","customer":"C666"}`, "deny", "blocked", 0, 0},
		{`{"amount_cents":200000,"currency":"USD"}`, "ask", "big", 2, 1},
		{`{"amount_cents":9000,"currency":"USD"}`, "ask", "default", 1, 0},
		// The CEL tiers read fields this effect lacks: none of them matches.
		{`{"customer":"C1"}`, "ask", "default", 1, 0},
	} {
		in, err := approvals.NewPolicyInput([]byte(tc.effect), "billing.credit", "agent", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ev := credit.Evaluate(in)
		p := ev.Policy
		if string(p.Verdict) != tc.verdict || p.TierName != tc.tier || p.Approvals != tc.approvals || len(ev.Shadow) != tc.shadow {
			t.Errorf("%s: %s by %s with %d approvals and %d shadow matches; want %s by %s, %d, %d",
				tc.effect, p.Verdict, p.TierName, p.Approvals, len(ev.Shadow), tc.verdict, tc.tier, tc.approvals, tc.shadow)
		}
	}
	if note := tools["billing.note"]; note.Verdict != approvals.VerdictAllow || !note.Notify {
		t.Errorf("note = %+v", note)
	}
	if wipe := tools["billing.wipe"]; wipe.Verdict != approvals.VerdictDeny || wipe.Deny != "wipes go through the change board" {
		t.Errorf("wipe = %+v", wipe)
	}
	// config check prints each form as it was written.
	out, err := cfg.EffectiveYAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`effect.amount_cents <= 5000 && effect.currency == "USD"`, "field: customer", "approvals: 0", "max_ttl: 8h0m0s"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("effective YAML lacks %q:\n%s", want, out)
		}
	}
	// What it prints loads again to the same policies.
	again := loadVerdictFile(t, string(out)).ReviewTools()
	for name, tool := range tools {
		if got, want := again[name].PolicyVersion(), tool.PolicyVersion(); got != want {
			t.Errorf("%s: the printed configuration's policy version is %s, not %s", name, got, want)
		}
	}
}

func TestConfigRefusesBadVerdicts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"deny and approvals on a tier", `deny: "this customer is blocked"`, "deny: \"no\"\n        approvals: 1",
			"tools.billing.credit: tiers[1]: deny and approvals are both set"},
		{"deny and approvals on a tool", `deny: "wipes go through the change board"`, "deny: \"no\"\n    approvals: 0",
			"tools.billing.wipe: deny and approvals are both set"},
		{"an empty deny", `deny: "wipes go through the change board"`, `deny: ""`, "tools.billing.wipe: deny needs the reason"},
		{"notify on an asking tier", "approvals: 2\n", "approvals: 2\n        notify: true\n", "tiers[3]: notify posts a card without buttons for a write the policy allows; it needs approvals: 0"},
		{"notify on a denying tool", `deny: "wipes go through the change board"`, "deny: \"no\"\n    notify: true", "tools.billing.wipe: notify posts a card"},
		{"notify on a shadow tier", "shadow: true", "shadow: true\n        notify: true", "tiers[2]: notify has no effect on a shadow tier"},
		{"a name with a space", "name: small", "name: small writes", `tiers[0]: name "small writes" must be 1 to 64 letters`},
		{"a long name", "name: small", "name: " + strings.Repeat("s", 65), "must be 1 to 64 letters"},
		{"a name twice", "name: big", "name: small", `tiers[3]: name "small" is also tiers[0]'s; names must be unique within a tool`},
		{"a name taken by a place", "- name: watch\n        when: effect.amount_cents > 100000\n        approvals: 0\n        shadow: true\n      - name: big",
			"- when: effect.amount_cents > 100000\n        approvals: 0\n        shadow: true\n      - name: tier-3", `tiers[3]: name "tier-3" is also tiers[2]'s`},
		{"the tool's own name", "name: small", "name: default", `tiers[0]: name "default" is the tool's own rule's`},
		{"negative approvals", "approvals: 2\n", "approvals: -1\n", "tiers[3]: approvals must be 0 (allowed by policy) or more"},
		{"a bad expression names its line", `effect.currency == "USD"'`, `effect.currency = "USD"'`,
			"FILE: line 8, column 9: tools.billing.credit: tiers[0].when: the expression at line 8, column 63: Syntax error: token recognition error at: '= '"},
		{"a bad expression in a block names its line", `effect.currency != "USD"`, `effect.currency != `,
			"tools.billing.credit: tiers[3].when: the expression at line 21: Syntax error: mismatched input '<EOF>'"},
		{"an expression that is not a bool", "when: effect.amount_cents > 100000\n", "when: effect.amount_cents + 1\n",
			"tiers[2].when: the expression: the expression returns int, not a bool"},
		{"an unknown variable", "when: effect.amount_cents > 100000\n", "when: amount_cents > 100000\n",
			"FILE: line 15, column 9: tools.billing.credit: tiers[2].when: the expression at line 15, column 15: undeclared reference to 'amount_cents'"},
		{"an empty expression", "when: effect.amount_cents > 100000\n", "when: ''\n", "tiers[2].when: the expression: the expression is empty"},
		{"when is neither form", "when: effect.amount_cents > 100000\n", "when: true\n",
			"tools.billing.credit.tiers[2].when: must be a CEL expression (a string) or a mapping of field and one comparison"},
		{"grants without max_ttl", "max_ttl: 8h, ", "", "tools.billing.credit: grants.max_ttl must be set"},
		{"grants without match", "match: [customer], ", "", "grants.match must list the effect fields"},
		{"grants with a bad path", "match: [customer]", "match: [customer., ok]", `grants.match "customer." must be a dotted path`},
		{"grants with a bad amount", "amount: amount_cents", "amount: .amount", `grants.amount ".amount" must be a dotted path`},
		{"grants where every round needs two", "approvers: [U1, U2, S0FINANCE]\n    tiers:", "approvers: [U1, U2, S0FINANCE]\n    approvals: 2\n    tiers:",
			"tools.billing.credit: grants never cover a round that needs more than one approval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(verdictFile, tc.from) {
				t.Fatalf("the file lacks %q", tc.from)
			}
			file := strings.Replace(verdictFile, tc.from, tc.to, 1)
			problems := strings.Join(loadProblems(t, file, nil), "\n")
			if !strings.Contains(problems, tc.want) {
				t.Errorf("problems lack %q:\n%s", tc.want, problems)
			}
		})
	}
}

// A tool that allows or denies every write needs no approvers; grants on a
// tool that needs two approvals are accepted when a tier needs one.
func TestConfigAcceptsPoliciesWithoutReviewers(t *testing.T) {
	t.Parallel()
	file := strings.Replace(verdictFile, "approvers: [U1, U2, S0FINANCE]\n    tiers:", "approvers: [U1, U2, S0FINANCE]\n    approvals: 2\n    tiers:", 1)
	file = strings.Replace(file, "approvals: 2\n    grants", "approvals: 1\n    grants", 1)
	cfg := loadVerdictFile(t, file)
	if got := cfg.ReviewTools()["billing.credit"]; got.Approvals != 2 || got.Tiers[3].Approvals != 1 || got.Grants == nil {
		t.Errorf("credit = %+v", got)
	}
}
