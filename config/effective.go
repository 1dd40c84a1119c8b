package config

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/callback"
)

// redacted stands in for a secret's value.
const redacted = "[redacted]"

// EffectiveYAML is the file as serve runs it (EffectiveFile), with the
// fields left at their zero value dropped and every secret redacted: what
// config check prints.
func (c *Config) EffectiveYAML() ([]byte, error) {
	effective := c.EffectiveFile()
	var doc yaml.Node
	if err := doc.Encode(effective); err != nil {
		return nil, err
	}
	pruneZeros(&doc, reflect.ValueOf(effective))
	redactSecrets(&doc)
	return yaml.Marshal(&doc)
}

// EffectiveFile is the file as serve runs it: the defaults of the packages
// that use each setting are taken from them (a key-unaware tool's
// verify_after from the executor, the callbacks' timings from the
// deliverer), not stated again here.
func (c *Config) EffectiveFile() FileConfig {
	f := c.File
	f.Tools = make(map[string]ToolConfig, len(c.File.Tools))
	run := c.ExecutorTools()
	for name, t := range c.File.Tools {
		t.VerifyAfter = run[name].WithDefaults().VerifyAfter
		f.Tools[name] = t
	}
	cb := callback.Config{Timeout: c.File.Callbacks.Timeout, Poll: c.File.Callbacks.Poll, RetryBase: c.File.Callbacks.RetryBase}.WithDefaults()
	f.Callbacks = CallbacksConfig{Timeout: cb.Timeout, Poll: cb.Poll, RetryBase: cb.RetryBase}
	return f
}

// pruneZeros drops the configuration's fields left at their zero value
// (empty, 0, false): the file would say the same by leaving them out, and
// an explicitly empty list can mean something else (slack.lookup_allowed:
// [] lets nobody look up), so printing them would change the
// configuration. Which fields are zero is read from v, the value n encodes;
// what the user wrote as a value (an effect schema, a tier's constant) is
// printed whole: additionalProperties: false and minimum: 0 are not defaults.
func pruneZeros(n *yaml.Node, v reflect.Value) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == yamlNodeType || v.Type() == effectSchemaType:
		return
	case v.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			field, ok := yamlFieldValue(v, n.Content[i].Value)
			if ok && field.IsZero() {
				continue
			}
			if ok {
				pruneZeros(n.Content[i+1], field)
			}
			kept = append(kept, n.Content[i], n.Content[i+1])
		}
		n.Content = kept
	case v.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if item := v.MapIndex(reflect.ValueOf(n.Content[i].Value).Convert(v.Type().Key())); item.IsValid() {
				pruneZeros(n.Content[i+1], item)
			}
		}
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode && v.Len() == len(n.Content):
		for i, item := range n.Content {
			pruneZeros(item, v.Index(i))
		}
	}
}

// yamlFieldValue is the field of struct v whose yaml name is name.
func yamlFieldValue(v reflect.Value, name string) (reflect.Value, bool) {
	f, ok := yamlField(v.Type(), name)
	if !ok {
		return reflect.Value{}, false
	}
	return v.FieldByIndex(f.Index), true
}

// redactSecrets replaces the value of every field that holds a secret (a
// callback's or a dispatch's secret, and every header, which is where
// credentials to providers go) in an encoded configuration, and the
// secrets a URL can carry (redactURL).
func redactSecrets(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i].Value, n.Content[i+1]
			switch {
			case key == "secret" || key == "secrets" || key == "client_secret" || key == "password" || key == "app_password" || key == "headers" || key == "env":
				redactAll(value)
				continue
			case key == "url" && value.Kind == yaml.ScalarNode:
				value.Value = redactURL(value.Value)
				continue
			}
			redactSecrets(value)
		}
		return
	}
	for _, c := range n.Content {
		redactSecrets(c)
	}
}

// redactAll redacts every non-empty scalar under n (a mapping keeps its keys).
func redactAll(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "" {
			n.Value, n.Tag, n.Style = redacted, "!!str", 0
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			redactAll(n.Content[i])
		}
	default:
		for _, c := range n.Content {
			redactAll(c)
		}
	}
}

// DescribeEnvironment says which settings from the environment serve would
// use, naming secrets only as set or unset.
func (c *Config) DescribeEnvironment() string {
	store := "the embedded store"
	if c.DatabaseURL != "" {
		store = "PostgreSQL at " + redactURL(c.DatabaseURL)
	}
	set := func(v string) string {
		if v == "" {
			return "unset"
		}
		return "set"
	}
	// A rotation shows as several values, still without them.
	secrets := func(v string) string {
		if n := len(splitSecrets(v)); n > 1 {
			return fmt.Sprintf("set (%d values)", n)
		}
		return set(v)
	}
	admin := c.AdminListen
	if admin == "" {
		admin = "unset"
	}
	return strings.Join([]string{
		store,
		"listen " + c.Listen,
		"admin listen " + admin,
		"COUNTERSIGN_DISPATCH_SECRET " + secrets(c.DispatchSecret),
		"SLACK_BOT_TOKEN " + set(c.SlackBotToken),
		"SLACK_SIGNING_SECRET " + secrets(c.SlackSigningSecret),
		"SLACK_APP_TOKEN " + set(c.SlackAppToken),
	}, "; ")
}

// urlRedacted stands in for a secret inside a URL: it is itself valid
// there, so a printed configuration still loads.
const urlRedacted = "xxxxx"

// redactURL hides what in a URL may be a credential: the password of its
// userinfo (or the whole userinfo when it has no password: a token is often
// written https://TOKEN@host), and the value of every query parameter,
// whatever its name (api_key, token, sig, X-Amz-Signature: no list of names
// is complete). The {key} placeholder is kept, so a verify URL's template
// still reads. The path is printed as written. The URL is edited as text,
// not re-encoded, so the rest is as the file has it; one that does not
// parse as a URL (where a secret could be anywhere) is not printed at all.
func redactURL(raw string) string {
	if _, err := url.Parse(raw); err != nil {
		return "(a URL that does not parse)"
	}
	rest, fragment, hasFragment := strings.Cut(raw, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		authority, path := after, ""
		if i := strings.Index(after, "/"); i >= 0 {
			authority, path = after[:i], after[i:]
		}
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			user, _, hasPassword := strings.Cut(authority[:at], ":")
			userinfo := urlRedacted
			if hasPassword {
				userinfo = user + ":" + urlRedacted
			}
			authority = userinfo + authority[at:]
		}
		rest = scheme + "://" + authority + path
	}
	if hasQuery {
		params := strings.Split(query, "&")
		for i, p := range params {
			if name, value, ok := strings.Cut(p, "="); ok && value != "" && value != "{key}" {
				params[i] = name + "=" + urlRedacted
			}
		}
		rest += "?" + strings.Join(params, "&")
	}
	if hasFragment {
		rest += "#" + fragment
	}
	return rest
}
