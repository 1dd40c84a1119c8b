package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Tier is a rule of a tool's policy for the effects its condition matches:
// allowed, denied, or asked of more (or other) reviewers. The first
// matching tier that is not a shadow sets the request's policy.
type Tier struct {
	// Name names the tier in decisions ("policy:<name>") and metrics; empty
	// names it by its place, "tier-1" for the first.
	Name      string
	When      Rule
	Verdict   Verdict  // "": ask
	Deny      string   // the message of a deny verdict
	Approvals int      // ask: 0 is the tool's
	Approvers []string // ask: empty is the tool's
	// Shadow tiers are evaluated and recorded but decide nothing.
	Shadow bool
	// Notify posts a card without buttons for a write this tier allows.
	Notify bool
}

// Condition compares the value at a dotted path of the effect with a
// constant. Numbers compare exactly, as decimals (no float rounding); a
// path that is missing from the effect never matches.
type Condition struct {
	Field string // dotted path: "amount_cents", "customer.tier", "lines.0.sku"
	Op    Op
	// Value is the constant: a json.Number, string, bool or nil; for OpIn a
	// []any of those.
	Value any
}

// Op is a comparison of a Condition.
type Op string

// The comparisons a condition may use.
const (
	OpGT  Op = "gt"
	OpGTE Op = "gte"
	OpLT  Op = "lt"
	OpLTE Op = "lte"
	OpEQ  Op = "eq"
	OpNE  Op = "ne"
	OpIn  Op = "in"
)

// Ops lists every comparison, in the order the docs give them.
var Ops = []Op{OpGT, OpGTE, OpLT, OpLTE, OpEQ, OpNE, OpIn}

// Validate reports a condition that could never be evaluated: an unknown
// comparison, an empty path, an ordering against something not a number, or
// an in without a list.
func (c Condition) Validate() error {
	if c.Field == "" || strings.HasPrefix(c.Field, ".") || strings.HasSuffix(c.Field, ".") || strings.Contains(c.Field, "..") {
		return fmt.Errorf("field %q must be a dotted path into the effect, such as amount_cents or customer.tier", c.Field)
	}
	switch c.Op {
	case OpGT, OpGTE, OpLT, OpLTE:
		if _, ok := number(c.Value); !ok {
			return fmt.Errorf("%s compares numbers; %v is not one", c.Op, c.Value)
		}
	case OpEQ, OpNE:
		if _, isList := c.Value.([]any); isList {
			return fmt.Errorf("%s compares with one value; use in for a list", c.Op)
		}
	case OpIn:
		if _, isList := c.Value.([]any); !isList {
			return fmt.Errorf("in needs a list of values")
		}
	default:
		return fmt.Errorf("unknown comparison %q; use one of gt, gte, lt, lte, eq, ne, in", c.Op)
	}
	return nil
}

// Matches reports whether the input's effect satisfies the condition.
func (c Condition) Matches(in PolicyInput) bool { return c.matches(in.Effect) }

// Source is the condition as configured, for the policy version.
func (c Condition) Source() string {
	b, _ := json.Marshal(map[string]any{"field": c.Field, string(c.Op): c.Value})
	return string(b)
}

// MatchesEffect reports whether the effect (JSON) satisfies the condition.
func (c Condition) MatchesEffect(effect []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(effect))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return false
	}
	return c.matches(doc)
}

func (c Condition) matches(doc any) bool {
	v, found := lookupPath(doc, c.Field)
	if !found {
		return false
	}
	switch c.Op {
	case OpGT, OpGTE, OpLT, OpLTE:
		a, okA := number(v)
		b, okB := number(c.Value)
		if !okA || !okB {
			return false
		}
		cmp := a.Cmp(b)
		switch c.Op {
		case OpGT:
			return cmp > 0
		case OpGTE:
			return cmp >= 0
		case OpLT:
			return cmp < 0
		default:
			return cmp <= 0
		}
	case OpEQ:
		return equal(v, c.Value)
	case OpNE:
		return !equal(v, c.Value)
	case OpIn:
		list, _ := c.Value.([]any)
		for _, item := range list {
			if equal(v, item) {
				return true
			}
		}
	}
	return false
}

// lookupPath follows a dotted path through objects (and, by index, arrays).
func lookupPath(doc any, path string) (any, bool) {
	for _, seg := range strings.Split(path, ".") {
		switch node := doc.(type) {
		case map[string]any:
			v, ok := node[seg]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(node) || seg != strconv.Itoa(i) {
				return nil, false
			}
			doc = node[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// number reads v as an exact rational: a json.Number, or a Go integer from
// code that builds conditions by hand.
func number(v any) (*big.Rat, bool) {
	var s string
	switch n := v.(type) {
	case json.Number:
		s = string(n)
	case int:
		s = strconv.Itoa(n)
	case int64:
		s = strconv.FormatInt(n, 10)
	default:
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// equal compares two JSON values: numbers by value (100 equals 100.0),
// everything else by type and value.
func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x.Cmp(y) == 0
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	return false // objects and arrays equal no constant
}
