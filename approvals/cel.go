package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// Limits on a CEL rule. An evaluation that would cost more than
// CELCostLimit (CEL's own units: about one per operation, one per list item
// a comprehension visits) is stopped and does not match. An expression whose
// worst case over the largest effect intake accepts would cost more than
// celLoadCostBound is refused at load: one pass over an effect's list is
// accepted (the evaluation limit stops it on a huge effect), a comprehension
// nested in another over the effect is not. The cost is tracked only for an
// expression whose worst case could reach the limit: for the others the
// tracking would cost time and could stop nothing.
//
// CELTimeLimit bounds the time of one evaluation as well: cel-go's cost
// tracker slows down as a comprehension grows, so a long pass could take
// seconds before it reached the cost limit. An evaluation stopped at
// CELTimeLimit does not match either.
const (
	CELCostLimit     = 1_000_000
	CELTimeLimit     = 50 * time.Millisecond
	celLoadCostBound = 100 * CELCostLimit
	celMaxSourceLen  = 4096
	// celInterruptEvery is how many comprehension steps pass between two
	// looks at the time limit.
	celInterruptEvery = 64
)

// Expression is a tier's condition written in CEL over the variables
// effect (a map), tool, agent, requested_for (strings) and now (a
// timestamp). It is compiled and type-checked once, when the configuration
// is loaded, and must return a bool.
//
// An evaluation error anywhere in the expression is a non-match: a field
// the effect lacks, a value of the wrong type, the cost limit. CEL's || and
// && would forgive an error on one side when the other decides, so
// `effect.missing > 5 || tool == "x"` would be true; here it does not
// match, because a rule must never let a write through by reading a field
// that is not there. Test for a field with has(effect.field) to say what
// its absence means.
type Expression struct {
	source string
	// bounded is whether the load-time estimate bounds the expression's
	// cost under CELCostLimit: it then runs without tracking and without a
	// deadline, neither of which could stop it.
	bounded bool
	// program is what decides, under the cost limit. traced records every
	// value so an error forgiven by || or && can be seen: cel-go cannot
	// track state and cost in one program (the second observer is
	// dropped), and a true result is checked by running traced after
	// program has shown, on the same input, that it costs little.
	program, traced cel.Program
}

// ExpressionError is a CEL expression refused at load, with the position of
// the first problem inside the expression (1-based; 0 when it has none).
type ExpressionError struct {
	Line, Column int
	Problem      string
}

func (e *ExpressionError) Error() string { return e.Problem }

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("effect", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("tool", cel.StringType),
		cel.Variable("agent", cel.StringType),
		cel.Variable("requested_for", cel.StringType),
		cel.Variable("now", cel.TimestampType),
		// effect.amount_cents <= 5000 whether the amount is 4200 or 42.5.
		cel.CrossTypeNumericComparisons(true),
		cel.DefaultUTCTimeZone(true),
		cel.ParserExpressionSizeLimit(celMaxSourceLen),
	)
})

// CompileExpression compiles and type-checks source, and refuses one that
// does not return a bool or whose worst-case cost is beyond bounds.
func CompileExpression(source string) (*Expression, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	if strings.TrimSpace(source) == "" {
		return nil, &ExpressionError{Problem: "the expression is empty"}
	}
	ast, iss := env.Compile(source)
	if iss.Err() != nil {
		errs := iss.Errors()
		if len(errs) == 0 {
			return nil, &ExpressionError{Problem: strings.TrimSpace(iss.Err().Error())}
		}
		loc := errs[0].Location
		e := &ExpressionError{Line: loc.Line(), Column: loc.Column() + 1, Problem: errs[0].Message}
		if len(errs) > 1 {
			e.Problem += fmt.Sprintf(" (and %d more)", len(errs)-1)
		}
		return nil, e
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) {
		hint := ""
		if out.IsExactType(cel.DynType) {
			hint = "; compare the field with a value, such as effect.flag == true"
		}
		return nil, &ExpressionError{Problem: fmt.Sprintf("the expression returns %s, not a bool%s", out, hint)}
	}
	est, err := env.EstimateCost(ast, effectSizes{})
	if err != nil {
		return nil, &ExpressionError{Problem: fmt.Sprintf("estimating the cost of the expression: %v", err)}
	}
	if est.Max > celLoadCostBound {
		return nil, &ExpressionError{Problem: fmt.Sprintf("the expression could cost more than %d to evaluate on a large effect; "+
			"avoid a comprehension (all, exists, map, filter) inside another", uint64(celLoadCostBound))}
	}
	bounded := est.Max <= CELCostLimit
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if !bounded {
		opts = append(opts, cel.CostLimit(CELCostLimit), cel.InterruptCheckFrequency(celInterruptEvery))
	}
	prg, err := env.Program(ast, opts...)
	if err != nil {
		return nil, &ExpressionError{Problem: fmt.Sprintf("preparing the expression: %v", err)}
	}
	traced, err := env.Program(ast, cel.EvalOptions(cel.OptOptimize, cel.OptTrackState),
		cel.InterruptCheckFrequency(celInterruptEvery))
	if err != nil {
		return nil, &ExpressionError{Problem: fmt.Sprintf("preparing the expression: %v", err)}
	}
	return &Expression{source: source, bounded: bounded, program: prg, traced: traced}, nil
}

// Source is the expression as configured.
func (e *Expression) Source() string { return e.source }

// Matches reports whether the expression is true of the input; any error
// while evaluating it is a non-match.
func (e *Expression) Matches(in PolicyInput) bool {
	ok, _ := e.Evaluate(in)
	return ok
}

// Evaluate is Matches with the reason a non-match did not match when it
// was an error (explain prints it).
func (e *Expression) Evaluate(in PolicyInput) (matched bool, err error) {
	defer func() {
		// cel-go reports errors as values; a panic would be a bug in it, and
		// must not let a write through or take the intake down.
		if r := recover(); r != nil {
			matched, err = false, fmt.Errorf("evaluating the expression: %v", r)
		}
	}()
	vars, err := in.celVariables()
	if err != nil {
		return false, err
	}
	eval := func(p cel.Program) (ref.Val, *cel.EvalDetails, error) { return p.Eval(vars) }
	if !e.bounded {
		ctx, cancel := context.WithTimeout(context.Background(), CELTimeLimit)
		defer cancel()
		eval = func(p cel.Program) (ref.Val, *cel.EvalDetails, error) { return p.ContextEval(ctx, vars) }
	}
	out, _, err := eval(e.program)
	if err != nil {
		return false, err
	}
	if b, isBool := out.Value().(bool); !isBool || !b {
		return false, nil
	}
	// True: unless a part of it failed and || or && forgave the failure.
	_, details, err := eval(e.traced)
	if err != nil {
		return false, err
	}
	state := details.State()
	for _, id := range state.IDs() {
		if v, found := state.Value(id); found && types.IsError(v) {
			return false, fmt.Errorf("%v", v)
		}
	}
	return true, nil
}

// celVars is an input's variables as CEL reads them, built once.
type celVars struct {
	once sync.Once
	vars map[string]any
	err  error
}

// celVariables converts the input for CEL, once per input however many
// tiers read it.
func (in PolicyInput) celVariables() (map[string]any, error) {
	build := func() (map[string]any, error) {
		effect, ok := celValue(in.Effect).(map[string]any)
		if !ok {
			return nil, errors.New("the effect is not a JSON object")
		}
		return map[string]any{
			"effect": effect, "tool": in.Tool, "agent": in.Agent,
			"requested_for": in.RequestedFor, "now": in.Now,
		}, nil
	}
	if in.celVars == nil {
		return build()
	}
	c := in.celVars
	c.once.Do(func() { c.vars, c.err = build() })
	return c.vars, c.err
}

// celValue converts an effect decoded with json.Number into the values CEL
// reads: a number is an int when it is whole and fits 64 bits, else a
// double, so effect.amount_cents <= 5000 reads 4200 and 42.5 alike.
func celValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		return celNumber(x)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, item := range x {
			m[k] = celValue(item)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, item := range x {
			l[i] = celValue(item)
		}
		return l
	case nil:
		return types.NullValue
	}
	return v
}

func celNumber(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return i
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return string(n) // not a number JSON could hold; compares with none
	}
	if r.IsInt() && r.Num().IsInt64() {
		return r.Num().Int64() // 5000.0, 5e3
	}
	f, _ := r.Float64()
	return f
}

// effectSizes bounds, for the load-time estimate, every list, map and
// string whose size CEL cannot see by the largest body intake accepts: a
// string has at most as many characters as it has bytes, a list or a map
// at most half as many items (each takes a value and a comma).
type effectSizes struct{}

func (effectSizes) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if n.Type() != nil && n.Type().IsExactType(cel.StringType) {
		return &checker.SizeEstimate{Min: 0, Max: MaxBodyBytes}
	}
	return &checker.SizeEstimate{Min: 0, Max: MaxBodyBytes / 2}
}

func (effectSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}
