package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// EffectSchema is a tool's JSON Schema (2020-12 unless the schema says
// otherwise) for its effects, compiled once at start. An effect that fails
// it is refused before its key is derived or anything is stored; the schema
// never enters the key.
type EffectSchema struct {
	raw    json.RawMessage
	schema *jsonschema.Schema
}

// CompileEffectSchema compiles the schema document raw (JSON) of the tool
// called tool. A $ref may name a file beside it (dir, "" for the working
// directory), which is bundled in at start (bundleSchema); nothing is
// fetched over the network.
func CompileEffectSchema(tool string, raw []byte, dir string) (*EffectSchema, error) {
	var doc map[string]any
	if err := decodeSchema(raw, &doc); err != nil || doc == nil {
		return nil, fmt.Errorf("effect_schema of %s must be a JSON Schema object", tool)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("effect_schema of %s: %w", tool, err)
	}
	base := &url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(abs, "effect_schema."+tool+".json"))}
	if doc, err = bundleSchema(doc, base); err != nil {
		return nil, fmt.Errorf("effect_schema of %s: %w", tool, err)
	}
	bundled, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("effect_schema of %s: %w", tool, err)
	}
	// The bundle is what is compiled, so what agents are shown is what
	// checks their effects. It reads no file: any that is left is an error.
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(bundled))
	if err != nil {
		return nil, fmt.Errorf("effect_schema of %s: %w", tool, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource(base.String(), parsed); err != nil {
		return nil, fmt.Errorf("effect_schema of %s: %w", tool, err)
	}
	schema, err := c.Compile(base.String())
	if err != nil {
		return nil, fmt.Errorf("effect_schema of %s: %w", tool, err)
	}
	return &EffectSchema{raw: bundled, schema: schema}, nil
}

// JSON returns the schema document as configured, with the files it
// references bundled under its $defs (no $ref leaves it), for GET /v1/tools.
func (s *EffectSchema) JSON() json.RawMessage { return s.raw }

// Check validates an effect (JSON bytes) against the schema. A failure is an
// InputError with CodeInvalidEffect whose Field is the JSON pointer of the
// failing value in the request body (/effect/…) and whose Message says why.
func (s *EffectSchema) Check(effect []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(effect))
	if err != nil {
		return invalid("effect", "the effect is not JSON: %v", err)
	}
	err = s.schema.Validate(v)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fmt.Errorf("validating the effect: %w", err)
	}
	var violations []Violation
	seen := map[Violation]bool{}
	for _, leaf := range leaves(verr, nil) {
		location := leaf.InstanceLocation
		if req, ok := leaf.ErrorKind.(*kind.Required); ok && len(req.Missing) > 0 {
			// Name each missing member itself, not the object that lacks it.
			for _, m := range req.Missing {
				v := violationAt(append(append([]string(nil), location...), m), leaf)
				if !seen[v] {
					seen[v] = true
					violations = append(violations, v)
				}
			}
			continue
		}
		if v := violationAt(location, leaf); !seen[v] {
			seen[v] = true
			violations = append(violations, v)
		}
	}
	// The validator's order follows maps; the answer's follows the effect.
	slices.SortStableFunc(violations, func(a, b Violation) int { return strings.Compare(a.Field, b.Field) })
	if len(violations) > maxViolations {
		violations = violations[:maxViolations]
	}
	return &InputError{
		Code:    CodeInvalidEffect,
		Field:   violations[0].Field,
		Message: violations[0].Message,
		Errors:  violations,
	}
}

// maxViolations caps the violations an answer lists: enough to fix an
// effect in one pass, few enough that a hostile body cannot make a huge
// answer.
const maxViolations = 50

func violationAt(location []string, leaf *jsonschema.ValidationError) Violation {
	path := "/effect" + jsonPointer(location)
	return Violation{
		Field:   path,
		Message: fmt.Sprintf("The effect does not match the tool's effect_schema at %s: %s.", path, leaf.ErrorKind.LocalizedString(englishPrinter)),
	}
}

var englishPrinter = message.NewPrinter(language.English)

// leaves appends the failures with no cause beneath them, the most specific
// reasons, in the validator's order.
func leaves(e *jsonschema.ValidationError, into []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(into, e)
	}
	for _, c := range e.Causes {
		into = leaves(c, into)
	}
	return into
}

// jsonPointer writes tokens as an RFC 6901 pointer ("" for the whole value).
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
