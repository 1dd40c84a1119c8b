package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/identity"
)

const policyUsage = `usage: countersign policy test FILE CASES
       countersign policy explain FILE INTENT

test evaluates each case of CASES (YAML or JSON: a list of {name, tool,
agent, requested_for, now, effect, expect: {verdict, tier}}) against the
policies of the configuration FILE and prints one line per case. It exits
0 when every case gets the verdict (allow, deny or ask) and the tier it
expects, 1 naming each case that does not.

explain reads INTENT, an intent as an agent posts it to /v1/requests (with
an optional "agent" beside its fields), and prints the verdict FILE's
policy gives it, the tier that decides, and why: each tier in order,
matched, not matched or shadow.

FILE is loaded and validated as serve loads it, with this environment;
nothing is started or connected to. ${VAR} references and
COUNTERSIGN_DISPATCH_SECRET that are unset read as placeholders, since
nothing is sent.
`

// policyCommand runs policy test and policy explain.
func policyCommand(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	rest, code, ok := parseArgs("policy", policyUsage, args, 3, nil, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 3 || (rest[0] != "test" && rest[0] != "explain") {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	cfg, err := loadPolicies(rest[1], getenv)
	if err != nil {
		fmt.Fprintf(stderr, "countersign policy %s: %v\n", rest[0], err)
		return 1
	}
	tools := cfg.ReviewTools()
	if rest[0] == "test" {
		return policyTest(tools, rest[2], stdout, stderr)
	}
	if err := policyExplain(tools, rest[2], stdout); err != nil {
		fmt.Fprintf(stderr, "countersign policy explain: %v\n", err)
		return 1
	}
	return 0
}

// placeholder stands in for a secret policy evaluation never reads, long
// enough for the checks on secrets' length.
const placeholder = "placeholder-for-a-secret-policy-commands-never-read"

// loadPolicies loads and validates the configuration file as serve does.
func loadPolicies(file string, getenv func(string) string) (*config.Config, error) {
	env := func(name string) string {
		switch {
		case name == "COUNTERSIGN_CONFIG":
			return file
		case getenv(name) != "":
			return getenv(name)
		case name == "COUNTERSIGN_DISPATCH_SECRET",
			!strings.HasPrefix(name, "COUNTERSIGN_") && !strings.HasPrefix(name, "SLACK_"):
			return placeholder
		}
		return ""
	}
	cfg, err := config.Load(env)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s has problems:\n%w", file, err)
	}
	return cfg, nil
}

// policyCase is one case of policy test.
type policyCase struct {
	Name         string     `yaml:"name"`
	Tool         string     `yaml:"tool"`
	Agent        string     `yaml:"agent"`
	RequestedFor string     `yaml:"requested_for"`
	Now          string     `yaml:"now"`
	Effect       yaml.Node  `yaml:"effect"`
	Expect       caseExpect `yaml:"expect"`
}

type caseExpect struct {
	Verdict string `yaml:"verdict"`
	Tier    string `yaml:"tier"`
}

// policyTest evaluates every case and reports each that differs.
func policyTest(tools map[string]approvals.Tool, file string, stdout, stderr io.Writer) int {
	raw, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(stderr, "countersign policy test: %v\n", err)
		return 1
	}
	var cases []policyCase
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&cases); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "countersign policy test: %s: %s\n", file, strings.TrimPrefix(err.Error(), "yaml: "))
		return 1
	}
	if len(cases) == 0 {
		fmt.Fprintf(stderr, "countersign policy test: %s lists no case\n", file)
		return 1
	}
	var failed []string
	for i, c := range cases {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("case %d", i+1)
		}
		got, err := runCase(tools, c)
		switch {
		case err != nil:
			fmt.Fprintf(stdout, "FAIL %s: %v\n", name, err)
			failed = append(failed, name)
		case got.Verdict != c.Expect.Verdict || (c.Expect.Tier != "" && got.Tier != c.Expect.Tier):
			fmt.Fprintf(stdout, "FAIL %s: expected %s, got %s\n", name, c.Expect, got)
			failed = append(failed, name)
		default:
			fmt.Fprintf(stdout, "ok   %s: %s\n", name, got)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "countersign policy test: %d of %d cases differ: %s\n", len(failed), len(cases), strings.Join(failed, "; "))
		return 1
	}
	fmt.Fprintf(stdout, "%d cases pass\n", len(cases))
	return 0
}

func (e caseExpect) String() string {
	if e.Tier == "" {
		return e.Verdict
	}
	return e.Verdict + " by " + e.Tier
}

// runCase evaluates one case: what it got, as it would be expected.
func runCase(tools map[string]approvals.Tool, c policyCase) (caseExpect, error) {
	switch approvals.Verdict(c.Expect.Verdict) {
	case approvals.VerdictAllow, approvals.VerdictDeny, approvals.VerdictAsk:
	default:
		return caseExpect{}, fmt.Errorf("expect.verdict %q must be allow, deny or ask", c.Expect.Verdict)
	}
	tool, ok := tools[c.Tool]
	if !ok {
		return caseExpect{}, fmt.Errorf("no tool %q is configured", c.Tool)
	}
	now := time.Now()
	if c.Now != "" {
		t, err := time.Parse(time.RFC3339, c.Now)
		if err != nil {
			return caseExpect{}, fmt.Errorf("now %q must be an RFC 3339 time, such as 2026-03-02T15:30:00Z", c.Now)
		}
		now = t
	}
	effect, err := nodeJSON(&c.Effect)
	if err != nil {
		return caseExpect{}, fmt.Errorf("effect: %w", err)
	}
	if c.Effect.Kind != yaml.MappingNode {
		return caseExpect{}, errors.New("effect must be a mapping (a JSON object)")
	}
	in, err := policyInput(effect, c.Tool, c.Agent, c.RequestedFor, now)
	if err != nil {
		return caseExpect{}, err
	}
	p := tool.Evaluate(in).Policy
	return caseExpect{Verdict: string(p.Verdict), Tier: p.TierName}, nil
}

// policyInput builds what the rules read as intake does: the person a
// write is for is read as intake reads them.
func policyInput(effect []byte, tool, agent, requestedFor string, now time.Time) (approvals.PolicyInput, error) {
	if requestedFor != "" {
		id, err := identity.ParsePerson(requestedFor)
		if err != nil {
			return approvals.PolicyInput{}, fmt.Errorf("requested_for must be %s", identity.PersonForms)
		}
		requestedFor = id.String()
	}
	return approvals.NewPolicyInput(effect, tool, agent, requestedFor, now)
}

// nodeJSON writes a YAML value as JSON, numbers with every digit written.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	v, err := nodeValue(n)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func nodeValue(n *yaml.Node) (any, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, item := range n.Content {
			v, err := nodeValue(item)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	case yaml.ScalarNode:
		v, err := config.ScalarValue(n)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	}
	return nil, nil // absent
}

// policyExplain prints the verdict the tool's policy gives the intent in
// file, and why.
func policyExplain(tools map[string]approvals.Tool, file string, stdout io.Writer) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var agent string
	if a, ok := fields["agent"]; ok {
		if err := json.Unmarshal(a, &agent); err != nil {
			return fmt.Errorf("%s: agent must be a string", file)
		}
		delete(fields, "agent")
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	intent, err := approvals.DecodeIntent(body)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	tool, ok := tools[intent.Tool]
	if !ok {
		return fmt.Errorf("%s: no tool %q is configured", file, intent.Tool)
	}
	in, err := policyInput(intent.Snapshot, intent.Tool, agent, intent.RequestedFor, time.Now())
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	ev := tool.Evaluate(in)
	p := ev.Policy
	w := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	w("tool:      %s", tool.Name)
	if agent != "" {
		w("agent:     %s", agent)
	}
	w("verdict:   %s", p.Verdict)
	w("tier:      %s", p.TierName)
	switch p.Verdict {
	case approvals.VerdictDeny:
		w("deny:      %s", p.Deny)
	case approvals.VerdictAsk:
		w("approvals: %d", p.Needed())
		w("approvers: %s", strings.Join(p.Approvers, ", "))
	case approvals.VerdictAllow:
		w("notify:    %v", ev.Notify)
	}
	w("version:   %s", p.Version)
	w("why:")
	decided := false
	for i, tier := range tool.Tiers {
		name := tier.Name
		if name == "" {
			name = fmt.Sprintf("tier-%d", i+1)
		}
		label := name
		if tier.Shadow {
			label += " (shadow)"
		}
		if decided && !tier.Shadow {
			w("  %-24s not reached: %s decided", label, p.TierName)
			continue
		}
		matched, reason := explainRule(tier.When, in)
		verdict := tier.Verdict
		if verdict == "" {
			verdict = approvals.VerdictAsk
		}
		switch {
		case matched && tier.Shadow:
			w("  %-24s matched: would %s, decides nothing", label, verdict)
		case matched:
			w("  %-24s matched: %s", label, verdict)
			decided = true
		default:
			w("  %-24s did not match%s", label, reason)
		}
		if tier.When != nil {
			w("  %-24s when: %s", "", tier.When.Source())
		}
	}
	if !decided {
		w("  %-24s applies: no tier decided", approvals.DefaultTierName)
	}
	return nil
}

// explainRule evaluates one rule, with the error that made a CEL rule a
// non-match.
func explainRule(rule approvals.Rule, in approvals.PolicyInput) (bool, string) {
	if rule == nil {
		return false, ""
	}
	if e, ok := rule.(*approvals.Expression); ok {
		matched, err := e.Evaluate(in)
		if err != nil {
			return false, " (" + err.Error() + ")"
		}
		return matched, ""
	}
	if c, ok := rule.(approvals.Condition); ok && !hasPath(in.Effect, c.Field) {
		return false, " (the effect has no " + c.Field + ")"
	}
	return rule.Matches(in), ""
}

// hasPath reports whether a dotted path leads somewhere in the effect.
func hasPath(doc any, path string) bool {
	for _, seg := range strings.Split(path, ".") {
		switch node := doc.(type) {
		case map[string]any:
			v, ok := node[seg]
			if !ok {
				return false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(node) {
				return false
			}
			doc = node[i]
		default:
			return false
		}
	}
	return true
}
