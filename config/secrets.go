package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// StringOrList is a YAML value written as one string or as a list of them:
// an agent's token_sha256, a callback's secret and a tool's dispatch
// secret, which hold several values while one is rotated (docs/OPERATIONS.md).
type StringOrList []string

// UnmarshalYAML takes a scalar as a list of one.
func (l *StringOrList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = StringOrList{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*l = list
	return nil
}

// MarshalYAML writes a single value as a scalar and several as a list, as
// the file had them (config check prints it so).
func (l StringOrList) MarshalYAML() (any, error) {
	if len(l) == 1 {
		return l[0], nil
	}
	return []string(l), nil
}

// bytes returns each value's UTF-8 bytes, as the signer takes them.
func (l StringOrList) bytes() [][]byte {
	out := make([][]byte, len(l))
	for i, v := range l {
		out[i] = []byte(v)
	}
	return out
}

// emptyValue says which value of the list is empty, or "" when none is:
// "is empty" for a single value, "value 2 of 2 is empty" in a list.
func (l StringOrList) emptyValue() string {
	for i, v := range l {
		if v == "" {
			if len(l) == 1 {
				return "is empty"
			}
			return fmt.Sprintf("value %d of %d is empty", i+1, len(l))
		}
	}
	return ""
}

var stringOrListType = reflect.TypeFor[StringOrList]()

// checkStringOrListYAML reports a StringOrList written as anything but a
// scalar or a non-empty list of scalars, at the user's line.
func checkStringOrListYAML(n *yaml.Node, path string) []error {
	problem := func(at *yaml.Node, p string) []error {
		return []error{&YAMLError{Line: at.Line, Column: at.Column, Path: path, Problem: p}}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return nil
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			return problem(n, "is an empty list: give one value, or a list of them while one is rotated")
		}
		var errs []error
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				errs = append(errs, &YAMLError{Line: item.Line, Column: item.Column, Path: fmt.Sprintf("%s[%d]", path, i),
					Problem: "must be a single value, not a list or a mapping"})
			}
		}
		return errs
	}
	return problem(n, "must be one value or a list of values")
}

// splitSecrets reads an environment variable that takes comma-separated
// secrets (COUNTERSIGN_DISPATCH_SECRET, SLACK_SIGNING_SECRET); nil when it
// is unset. Nothing is trimmed: a single secret is the variable's whole
// value, byte for byte, as before several were allowed (a trailing newline
// from a mounted file included, which the provider's copy may share).
func splitSecrets(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// DispatchSecrets are COUNTERSIGN_DISPATCH_SECRET's secrets: each one signs
// every dispatch of a tool without a dispatch.secret of its own.
func (c *Config) DispatchSecrets() [][]byte {
	return StringOrList(splitSecrets(c.DispatchSecret)).bytes()
}

// SlackSigningSecrets are SLACK_SIGNING_SECRET's secrets: a request from
// Slack verifies when it matches any.
func (c *Config) SlackSigningSecrets() []string {
	return splitSecrets(c.SlackSigningSecret)
}

// validateSecretLists reports an empty value among the comma-separated
// secrets of the environment and the token hashes two agents share, or one
// agent lists twice: a token identifies one agent. No message holds a
// secret.
func (c *Config) validateSecretLists() []error {
	var errs []error
	for _, env := range []struct{ name, value string }{
		{"COUNTERSIGN_DISPATCH_SECRET", c.DispatchSecret},
		{"SLACK_SIGNING_SECRET", c.SlackSigningSecret},
	} {
		secrets := splitSecrets(env.value)
		for _, s := range secrets {
			if s == "" {
				errs = append(errs, fmt.Errorf("%s holds an empty value: separate the secrets with single commas (old,new), with none before the first or after the last", env.name))
				break
			}
		}
		for _, s := range secrets {
			// With several, a space after a comma is a typo that would
			// sign with a secret no receiver holds.
			if len(secrets) > 1 && s != strings.TrimSpace(s) {
				errs = append(errs, fmt.Errorf("%s: a value begins or ends with a space; write the secrets as old,new, with nothing around the commas", env.name))
				break
			}
		}
	}
	owner := map[string]int{}
	for i, a := range c.File.Agents {
		for _, h := range a.TokenSHA256 {
			h = strings.ToLower(strings.TrimSpace(h))
			if h == "" {
				continue // Validate says it is not a hash
			}
			switch j, seen := owner[h]; {
			case seen && j == i:
				errs = append(errs, fmt.Errorf("agents[%d]: token_sha256 lists the same hash twice", i))
			case seen:
				errs = append(errs, fmt.Errorf("agents[%d]: a token_sha256 is also agents[%d]'s, but a token identifies one agent", i, j))
			default:
				owner[h] = i
			}
		}
	}
	return errs
}
