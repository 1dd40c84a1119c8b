package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/approvals"
)

// TierConfig is one rule of a tool's policy: the effects its condition
// matches are allowed (approvals: 0), denied (deny: "why"), or need
// Approvals approvals from Approvers (each defaults to the tool's).
type TierConfig struct {
	// Name names the tier in decisions (policy:<name>), metrics and
	// policy test; empty names it by its place, tier-1 for the first.
	Name      string     `yaml:"name"`
	When      WhenConfig `yaml:"when"`
	Approvals *int       `yaml:"approvals"` // nil: the tool's; 0: allowed by policy
	Approvers []string   `yaml:"approvers"`
	Deny      *string    `yaml:"deny"`
	// Shadow tiers are evaluated and recorded, and decide nothing.
	Shadow bool `yaml:"shadow"`
	// Notify posts a card without buttons for a write the tier allows.
	Notify bool `yaml:"notify"`
}

// GrantsConfig lets an approver allow similar writes for a while: at most
// MaxTTL, for effects whose Match fields equal the approved one's and
// whose Amount field, when named, is at most the approved amount.
type GrantsConfig struct {
	MaxTTL time.Duration `yaml:"max_ttl"`
	Match  []string      `yaml:"match"`
	Amount string        `yaml:"amount"`
}

// WhenConfig is a tier's condition: a CEL expression (a string), or a
// dotted path into the effect and exactly one comparison. The constants
// stay YAML nodes until they are read, so a number keeps every digit the
// user wrote.
type WhenConfig struct {
	Field string    `yaml:"field"`
	GT    yaml.Node `yaml:"gt"`
	GTE   yaml.Node `yaml:"gte"`
	LT    yaml.Node `yaml:"lt"`
	LTE   yaml.Node `yaml:"lte"`
	EQ    yaml.Node `yaml:"eq"`
	NE    yaml.Node `yaml:"ne"`
	In    yaml.Node `yaml:"in"`

	// Expression is the CEL form; the fields above are then empty.
	Expression string `yaml:"-"`
	// node is where the expression is in the file, to place its errors.
	node *yaml.Node
}

// whenMapping is WhenConfig without its methods, for the mapping form.
type whenMapping WhenConfig

// UnmarshalYAML reads either form.
func (w *WhenConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		// A block (|) keeps its last newline; without it an error at the
		// end is placed on the expression's last line, not the next.
		*w = WhenConfig{Expression: strings.TrimRight(n.Value, " \t\n"), node: n}
		return nil
	}
	var m whenMapping
	if err := n.Decode(&m); err != nil {
		return err
	}
	*w = WhenConfig(m)
	return nil
}

// MarshalYAML writes the form it was read in (config check prints it).
func (w WhenConfig) MarshalYAML() (any, error) {
	if w.Expression != "" {
		return w.Expression, nil
	}
	return whenMapping(w), nil
}

// Rule reads the condition: a compiled CEL expression or a comparison. A
// CEL error names its place in the file when the file is known.
func (w WhenConfig) Rule() (approvals.Rule, error) {
	if !w.isExpression() {
		c, err := w.Condition()
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	e, err := approvals.CompileExpression(w.Expression)
	if err != nil {
		var ee *approvals.ExpressionError
		if errors.As(err, &ee) && ee.Line > 0 && w.node != nil {
			line, column := w.filePosition(ee.Line, ee.Column)
			if column > 0 {
				return nil, fmt.Errorf("the expression at line %d, column %d: %s", line, column, ee.Problem)
			}
			return nil, fmt.Errorf("the expression at line %d: %s", line, ee.Problem)
		}
		return nil, fmt.Errorf("the expression: %w", err)
	}
	return e, nil
}

// isExpression reports whether the condition is written in CEL.
func (w WhenConfig) isExpression() bool { return w.Expression != "" || w.node != nil }

// filePosition turns a place in the expression into one in the file. A
// quoted or plain expression starts where its node does; a block one (| or
// >) on the next line, at an indentation the node does not keep, so only
// its line is known.
func (w WhenConfig) filePosition(line, column int) (int, int) {
	n := w.node
	switch n.Style {
	case yaml.LiteralStyle, yaml.FoldedStyle:
		return n.Line + line, 0
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		if line == 1 {
			return n.Line, n.Column + column // past the opening quote
		}
		return n.Line + line - 1, 0
	}
	if line == 1 {
		return n.Line, n.Column + column - 1
	}
	return n.Line + line - 1, 0
}

// Condition reads the comparison.
func (w WhenConfig) Condition() (approvals.Condition, error) {
	set := map[approvals.Op]*yaml.Node{
		approvals.OpGT: &w.GT, approvals.OpGTE: &w.GTE, approvals.OpLT: &w.LT, approvals.OpLTE: &w.LTE,
		approvals.OpEQ: &w.EQ, approvals.OpNE: &w.NE, approvals.OpIn: &w.In,
	}
	c := approvals.Condition{Field: w.Field}
	var ops []string
	for _, op := range approvals.Ops {
		if n := set[op]; n.Kind != 0 { // absent keys leave a zero node
			ops = append(ops, string(op))
			c.Op = op
		}
	}
	if len(ops) != 1 {
		return c, fmt.Errorf("when needs exactly one of gt, gte, lt, lte, eq, ne, in; it has %d (%s)", len(ops), strings.Join(ops, ", "))
	}
	v, err := yamlValue(set[c.Op], c.Op == approvals.OpIn)
	if err != nil {
		return c, fmt.Errorf("when.%s: %w", c.Op, err)
	}
	c.Value = v
	return c, c.Validate()
}

// yamlValue reads a condition constant as JSON would hold it: numbers as
// exact decimals (json.Number), strings, booleans, null; a list when list.
func yamlValue(n *yaml.Node, list bool) (any, error) {
	if list {
		if n.Kind != yaml.SequenceNode {
			return nil, errors.New("must be a list")
		}
		items := make([]any, len(n.Content))
		for i, item := range n.Content {
			v, err := yamlValue(item, false)
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		return items, nil
	}
	if n.Kind != yaml.ScalarNode {
		return nil, errors.New("must be a single value")
	}
	return ScalarValue(n)
}

// ScalarValue reads a YAML scalar as JSON would hold it: numbers as exact
// decimals (json.Number, every digit the user wrote), strings, booleans,
// null.
func ScalarValue(n *yaml.Node) (any, error) {
	switch n.Tag {
	case "!!int":
		i, ok := new(big.Int).SetString(n.Value, 0)
		if !ok {
			return nil, fmt.Errorf("%s is not a number", n.Value)
		}
		return json.Number(i.String()), nil
	case "!!float":
		if _, ok := new(big.Rat).SetString(n.Value); !ok {
			return nil, fmt.Errorf("%s is not a finite number", n.Value)
		}
		return json.Number(n.Value), nil
	case "!!bool":
		var b bool
		err := n.Decode(&b)
		return b, err
	case "!!null":
		return nil, nil
	}
	return n.Value, nil
}

// tierName is a name a decision, a metric label and a command line can
// carry as it is.
var tierName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// validatePolicy reports every problem with the tool's review policy.
func (t ToolConfig) validatePolicy(name string) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tools.%s: "+format, append([]any{name}, args...)...))
	}
	if t.Approvals != nil && *t.Approvals < 0 {
		add("approvals must be 0 (allowed by policy) or more")
	}
	for _, problem := range verdictProblems(t.Approvals, t.Deny, t.Notify, false) {
		add("%s", problem)
	}
	if t.asks() {
		if err := quorumReachable(t.needed(), t.Approvers); err != nil {
			add("%v", err)
		}
	}
	switch approvals.ReasonRule(t.RejectReason) {
	case "", approvals.ReasonOff, approvals.ReasonOptional, approvals.ReasonRequired:
	default:
		add("reject_reason %q must be off, optional or required", t.RejectReason)
	}
	names := map[string]int{approvals.DefaultTierName: -1}
	for i, tier := range t.Tiers {
		if tier.Name != "" && !tierName.MatchString(tier.Name) {
			add("tiers[%d]: name %q must be 1 to 64 letters, digits, '_', '.' or '-'", i, tier.Name)
		}
		effective := tier.effectiveName(i)
		if j, taken := names[effective]; taken {
			if j < 0 {
				add("tiers[%d]: name %q is the tool's own rule's; choose another", i, effective)
			} else {
				add("tiers[%d]: name %q is also tiers[%d]'s; names must be unique within a tool", i, effective, j)
			}
		} else {
			names[effective] = i
		}
		if _, err := tier.When.Rule(); err != nil && tier.When.isExpression() {
			add("tiers[%d].when: %v", i, err)
		} else if err != nil {
			add("tiers[%d]: %v", i, err)
		}
		if tier.Approvals != nil && *tier.Approvals < 0 {
			add("tiers[%d]: approvals must be 0 (allowed by policy) or more", i)
		}
		for _, problem := range verdictProblems(tier.Approvals, tier.Deny, tier.Notify, tier.Shadow) {
			add("tiers[%d]: %s", i, problem)
		}
		for _, err := range badIDs(tier.Approvers) {
			add("tiers[%d]: approver %v", i, err)
		}
		if tier.Deny != nil || tier.Approvals != nil && *tier.Approvals == 0 {
			continue // nobody is asked
		}
		approvers := tier.Approvers
		if len(approvers) == 0 {
			approvers = t.Approvers
		}
		if err := quorumReachable(t.tierNeeded(tier), approvers); err != nil {
			add("tiers[%d]: %v", i, err)
		}
	}
	errs = append(errs, t.validateGrants(name)...)
	return errs
}

// verdictProblems reports a rule that says two verdicts, a deny without its
// message, or a notify that could never post.
func verdictProblems(approvals *int, deny *string, notify, shadow bool) []string {
	var problems []string
	if deny != nil && approvals != nil {
		problems = append(problems, "deny and approvals are both set; a rule either denies or says how many approvals it needs")
	}
	if deny != nil && strings.TrimSpace(*deny) == "" {
		problems = append(problems, `deny needs the reason the agent is given, such as deny: "refunds over $10,000 go through finance"`)
	}
	allows := deny == nil && approvals != nil && *approvals == 0
	switch {
	case notify && shadow:
		problems = append(problems, "notify has no effect on a shadow tier, which decides nothing; remove one of them")
	case notify && !allows:
		problems = append(problems, "notify posts a card without buttons for a write the policy allows; it needs approvals: 0")
	}
	return problems
}

// validateGrants reports a grants setting that could never be used.
func (t ToolConfig) validateGrants(name string) []error {
	g := t.Grants
	if g == nil {
		return nil
	}
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tools.%s: grants."+format, append([]any{name}, args...)...))
	}
	if g.MaxTTL <= 0 {
		add("max_ttl must be set, such as 8h: the longest a grant may last")
	}
	if len(g.Match) == 0 {
		add("match must list the effect fields a later write must share with the approved one, such as [customer]")
	}
	for _, field := range g.Match {
		if !dottedPath(field) {
			add("match %q must be a dotted path into the effect, such as customer or customer.id", field)
		}
	}
	if g.Amount != "" && !dottedPath(g.Amount) {
		add("amount %q must be a dotted path into the effect, such as amount_cents", g.Amount)
	}
	if !t.hasSingleApprovalRound() {
		errs = append(errs, fmt.Errorf("tools.%s: grants never cover a round that needs more than one approval, and every rule of this tool that asks needs more", name))
	}
	return errs
}

// dottedPath reports whether s names a field of the effect.
func dottedPath(s string) bool {
	return s != "" && !strings.HasPrefix(s, ".") && !strings.HasSuffix(s, ".") && !strings.Contains(s, "..")
}

// asks reports whether the tool's own rule asks reviewers.
func (t ToolConfig) asks() bool {
	return t.Deny == nil && (t.Approvals == nil || *t.Approvals > 0)
}

// needed is how many approvals the tool's own rule needs when it asks.
func (t ToolConfig) needed() int {
	if t.Approvals == nil {
		return 1
	}
	return max(*t.Approvals, 1)
}

// tierNeeded is how many approvals an asking tier needs.
func (t ToolConfig) tierNeeded(tier TierConfig) int {
	if tier.Approvals == nil {
		return t.needed()
	}
	return *tier.Approvals
}

// hasSingleApprovalRound reports whether some rule of the tool asks for
// exactly one approval: the only rounds a grant may cover.
func (t ToolConfig) hasSingleApprovalRound() bool {
	if t.asks() && t.needed() == 1 {
		return true
	}
	for _, tier := range t.Tiers {
		asks := tier.Deny == nil && (tier.Approvals == nil || *tier.Approvals > 0)
		if asks && !tier.Shadow && t.tierNeeded(tier) == 1 {
			return true
		}
	}
	return false
}

// needsApprovers reports whether any rule of the tool could ask the
// tool's own approvers.
func (t ToolConfig) needsApprovers() bool {
	if t.asks() {
		return true
	}
	for _, tier := range t.Tiers {
		asks := tier.Deny == nil && (tier.Approvals == nil || *tier.Approvals > 0)
		if asks && len(tier.Approvers) == 0 {
			return true
		}
	}
	return false
}

// effectiveName is the tier's name, or its place (approvals names it the
// same way).
func (tier TierConfig) effectiveName(i int) string {
	if tier.Name != "" {
		return tier.Name
	}
	return fmt.Sprintf("tier-%d", i+1)
}

// quorumReachable refuses a policy that needs more approvals than its
// approvers could ever give: only listed users, fewer than needed. A user
// group may grow, so a list with one is not judged.
func quorumReachable(needed int, approvers []string) error {
	if needed <= 1 || slices.ContainsFunc(approvers, isGroup) {
		return nil
	}
	if len(approvers) < needed {
		return fmt.Errorf("needs %d approvals but lists only %d approvers and no user group, so it could never be approved", needed, len(approvers))
	}
	return nil
}

// verdictOf is a rule's verdict as configured.
func verdictOf(approvalsSet *int, deny *string) (approvals.Verdict, string) {
	switch {
	case deny != nil:
		return approvals.VerdictDeny, *deny
	case approvalsSet != nil && *approvalsSet == 0:
		return approvals.VerdictAllow, ""
	}
	return approvals.VerdictAsk, ""
}

// reviewTiers converts the tiers Validate accepted.
func (t ToolConfig) reviewTiers() []approvals.Tier {
	var tiers []approvals.Tier
	for _, tier := range t.Tiers {
		rule, err := tier.When.Rule()
		if err != nil {
			continue // Validate refused it
		}
		verdict, deny := verdictOf(tier.Approvals, tier.Deny)
		tiers = append(tiers, approvals.Tier{
			Name: tier.Name, When: rule, Verdict: verdict, Deny: deny,
			Approvals: deref(tier.Approvals), Approvers: canonical(tier.Approvers),
			Shadow: tier.Shadow, Notify: tier.Notify,
		})
	}
	return tiers
}

// reviewGrants converts the grants setting.
func (t ToolConfig) reviewGrants() *approvals.GrantRule {
	if t.Grants == nil {
		return nil
	}
	return &approvals.GrantRule{MaxTTL: t.Grants.MaxTTL, Match: slices.Clone(t.Grants.Match), Amount: t.Grants.Amount}
}

func deref(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}
