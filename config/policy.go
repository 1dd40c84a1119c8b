package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/approvals"
)

// TierConfig is one review tier of a tool: the effects its condition matches
// need Approvals approvals from Approvers (each defaults to the tool's).
type TierConfig struct {
	When      WhenConfig `yaml:"when"`
	Approvals int        `yaml:"approvals"`
	Approvers []string   `yaml:"approvers"`
}

// WhenConfig is a tier's condition: a dotted path into the effect and
// exactly one comparison. The constants stay YAML nodes until they are
// read, so a number keeps every digit the user wrote.
type WhenConfig struct {
	Field string    `yaml:"field"`
	GT    yaml.Node `yaml:"gt"`
	GTE   yaml.Node `yaml:"gte"`
	LT    yaml.Node `yaml:"lt"`
	LTE   yaml.Node `yaml:"lte"`
	EQ    yaml.Node `yaml:"eq"`
	NE    yaml.Node `yaml:"ne"`
	In    yaml.Node `yaml:"in"`
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

// validatePolicy reports every problem with the tool's review policy.
func (t ToolConfig) validatePolicy(name string) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tools.%s: "+format, append([]any{name}, args...)...))
	}
	if t.Approvals < 0 {
		add("approvals must be at least 1")
	}
	if err := quorumReachable(t.Approvals, t.Approvers); err != nil {
		add("%v", err)
	}
	switch approvals.ReasonRule(t.RejectReason) {
	case "", approvals.ReasonOff, approvals.ReasonOptional, approvals.ReasonRequired:
	default:
		add("reject_reason %q must be off, optional or required", t.RejectReason)
	}
	for i, tier := range t.Tiers {
		if _, err := tier.When.Condition(); err != nil {
			add("tiers[%d]: %v", i, err)
		}
		if tier.Approvals < 0 {
			add("tiers[%d]: approvals must be at least 1", i)
		}
		for _, err := range badIDs(tier.Approvers) {
			add("tiers[%d]: approver %v", i, err)
		}
		approvers := tier.Approvers
		if len(approvers) == 0 {
			approvers = t.Approvers
		}
		needed := tier.Approvals
		if needed == 0 {
			needed = t.Approvals
		}
		if err := quorumReachable(needed, approvers); err != nil {
			add("tiers[%d]: %v", i, err)
		}
	}
	return errs
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

// reviewTiers converts the tiers Validate accepted.
func (t ToolConfig) reviewTiers() []approvals.Tier {
	var tiers []approvals.Tier
	for _, tier := range t.Tiers {
		c, err := tier.When.Condition()
		if err != nil {
			continue // Validate refused it
		}
		tiers = append(tiers, approvals.Tier{When: c, Approvals: tier.Approvals, Approvers: canonical(tier.Approvers)})
	}
	return tiers
}
