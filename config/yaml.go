package config

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// YAMLError is one problem in the configuration file, at the user's own line
// and column and named by the user's own field path
// (tools.billing.credit.key_awre), never by a Go type.
type YAMLError struct {
	Line, Column int
	Path         string
	Problem      string
}

func (e *YAMLError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Problem)
	}
	return fmt.Sprintf("line %d, column %d: %s: %s", e.Line, e.Column, e.Path, e.Problem)
}

var (
	durationType     = reflect.TypeFor[time.Duration]()
	effectSchemaType = reflect.TypeFor[EffectSchemaConfig]()
	// A yaml.Node field takes any value; its owner checks it (see WhenConfig).
	yamlNodeType = reflect.TypeFor[yaml.Node]()
	whenType     = reflect.TypeFor[WhenConfig]()
)

// checkYAML compares the parsed document against the type it will be
// decoded into and returns every problem: unknown fields (with the closest
// known name), and values of the wrong shape. The document is checked, not
// re-serialised, so positions are the user's own even after ${VAR} expansion.
func checkYAML(n *yaml.Node, t reflect.Type, path string) []error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return checkYAML(n.Content[0], t, path)
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // absent: the default applies
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	problem := func(format string, args ...any) []error {
		return []error{&YAMLError{Line: n.Line, Column: n.Column, Path: path, Problem: fmt.Sprintf(format, args...)}}
	}
	switch {
	case t == yamlNodeType:
		return nil
	case t == effectSchemaType:
		return checkEffectSchemaYAML(n, path)
	case t == windowType:
		if n.Kind != yaml.ScalarNode {
			return problem("must be a window such as 90d, 36h or 30s")
		}
		if _, err := ParseWindow(n.Value); err != nil {
			return problem("%v", err)
		}
		return nil
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return problem("must be a duration such as 30s or 2h")
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return problem("%q is not a duration; write it like 30s, 10m or 2h", n.Value)
		}
		return nil
	case t == stringOrListType:
		return checkStringOrListYAML(n, path)
	case t == whenType && n.Kind != yaml.MappingNode:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			return problem("must be a CEL expression (a string) or a mapping of field and one comparison")
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return problem("must be a mapping of %s", strings.Join(yamlFields(t), ", "))
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			field, ok := yamlField(t, key.Value)
			if !ok {
				msg := "unknown field"
				if near := closest(key.Value, yamlFields(t)); near != "" {
					msg += "; did you mean " + near + "?"
				}
				errs = append(errs, &YAMLError{Line: key.Line, Column: key.Column, Path: joinYAMLPath(path, key.Value), Problem: msg})
				continue
			}
			errs = append(errs, checkYAML(value, field.Type, joinYAMLPath(path, key.Value))...)
		}
		return errs
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return problem("must be a mapping")
		}
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, checkYAML(n.Content[i+1], t.Elem(), joinYAMLPath(path, n.Content[i].Value))...)
		}
		return errs
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return problem("must be a list")
		}
		var errs []error
		for i, item := range n.Content {
			errs = append(errs, checkYAML(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			return problem("must be a single value, not a list or a mapping")
		}
	case t.Kind() == reflect.Bool:
		// The decoder also takes YAML 1.1's yes/no/on/off.
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!bool" && !oldBools[n.Value]) {
			return problem("must be true or false")
		}
	case t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return problem("must be a whole number")
		}
		if _, err := strconv.ParseInt(n.Value, 0, 32); err != nil {
			return problem("%s is not a whole number countersign can hold", n.Value)
		}
	}
	return nil
}

var oldBools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": true, "N": true, "no": true, "No": true, "NO": true, "off": true, "Off": true, "OFF": true,
}

// yamlField returns the struct field whose yaml tag is name.
// A field tagged ",inline" lends its own fields to its struct.
func yamlField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			if inner, ok := yamlField(f.Type, name); ok {
				return inner, true
			}
			continue
		}
		if tag == name && tag != "" && tag != "-" {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlFields lists the yaml names of a struct's fields, in declaration order.
func yamlFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			names = append(names, yamlFields(f.Type)...)
		} else if tag != "" && tag != "-" {
			names = append(names, tag)
		}
	}
	return names
}

func joinYAMLPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// closest returns the candidate within two edits of name (the likely typo),
// or "".
func closest(name string, candidates []string) string {
	best, bestDistance := "", 3
	for _, c := range candidates {
		if d := editDistance(name, c); d < bestDistance {
			best, bestDistance = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// yamlPositions maps every field path in the document (tools.billing.credit,
// agents[0].callback) to the node that holds its key, or the item itself in
// a list, so a problem found after decoding can name its line too.
func yamlPositions(doc *yaml.Node) map[string]*yaml.Node {
	at := map[string]*yaml.Node{}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		for n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := joinYAMLPath(path, n.Content[i].Value)
				at[p] = n.Content[i]
				walk(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for i, item := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				at[p] = item
				walk(item, p)
			}
		}
	}
	walk(doc, "")
	return at
}

// leadingPath is the field path a validation sentence begins with
// ("tools.billing.credit: approvers is empty", "executor.expiry_schedule "x" is not…").
var leadingPath = regexp.MustCompile(`^([A-Za-z0-9_.\[\]-]+)[: ]`)

// withLines prefixes each problem that names a field of the file with the
// file and the line of the closest field the document has: the same form
// as the decoder's own problems. Problems of the environment stay as they are.
func withLines(file string, at map[string]*yaml.Node, errs []error) []error {
	var out []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			out = append(out, withLines(file, at, joined.Unwrap())...)
			continue
		}
		m := leadingPath.FindStringSubmatch(err.Error())
		if m == nil || at == nil {
			out = append(out, err)
			continue
		}
		node := subjectField(at, m[1], err.Error()[len(m[0]):])
		if node == nil {
			node = closestField(at, m[1])
		}
		if node == nil {
			out = append(out, err)
			continue
		}
		out = append(out, fmt.Errorf("%s: line %d, column %d: %w", file, node.Line, node.Column, err))
	}
	return out
}

// agentPrefix is how hook.ParseAgent begins its sentences (agent "name": ),
// which the subject of the sentence follows.
var agentPrefix = regexp.MustCompile(`^\s*agent "(?:[^"\\]|\\.)*": `)

// subjectField is the node of the field a sentence about path is about,
// when the file has it: "tools.x: dispatch.url must be…" is about
// tools.x.dispatch.url, "agents[0]: agent "a": token_sha256 must be…" about
// agents[0].token_sha256, and "tools.x: approver "W1" is not…" about the
// item "W1" of tools.x.approvers. The subject is the sentence's first word
// (after an article); nil when that names no field the file has.
func subjectField(at map[string]*yaml.Node, path, rest string) *yaml.Node {
	rest = agentPrefix.ReplaceAllString(strings.TrimLeft(rest, ": "), "")
	words := strings.Fields(rest)
	if len(words) > 0 && (words[0] == "a" || words[0] == "an" || words[0] == "the") {
		words = words[1:]
	}
	if len(words) == 0 {
		return nil
	}
	subject := strings.TrimRight(words[0], ":,;")
	for _, name := range []string{subject, subject + "s"} { // approver "W1" is one of approvers
		field := joinYAMLPath(path, name)
		node, ok := at[field]
		if !ok {
			continue
		}
		// A value quoted next is an item of the list: point at the item.
		if len(words) > 1 {
			if v, err := strconv.Unquote(strings.TrimRight(words[1], ":,;")); err == nil {
				for i := 0; ; i++ {
					item, ok := at[fmt.Sprintf("%s[%d]", field, i)]
					if !ok {
						break
					}
					if item.Value == v {
						return item
					}
				}
			}
		}
		return node
	}
	return nil
}

// closestField is the node of path, or of the nearest enclosing field the
// file has (a missing tools.x.approvers is reported at tools.x).
func closestField(at map[string]*yaml.Node, path string) *yaml.Node {
	for path != "" {
		if n, ok := at[path]; ok {
			return n
		}
		cut := max(strings.LastIndex(path, "."), strings.LastIndex(path, "["))
		if cut <= 0 {
			return nil
		}
		path = path[:cut]
	}
	return nil
}
