package main

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"gopkg.in/yaml.v3"
)

const configUsage = `usage: countersign config check FILE

Validates the configuration file FILE as serve would load it, with this
environment (its ${VAR} references, COUNTERSIGN_* and SLACK_* settings), and
prints the effective configuration: the file with every default filled in,
secrets redacted. Exits 0 when serve would start with it, 1 with every
problem listed (each with its line) when it would not. Nothing is started
or connected to.
`

// redacted stands in for a secret's value.
const redacted = "[redacted]"

// configCheck validates file and prints the effective configuration.
func configCheck(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	rest, code, ok := parseArgs("config", configUsage, args, 2, nil, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 2 || rest[0] != "check" {
		fmt.Fprint(stderr, configUsage)
		return 2
	}
	file := rest[1]
	env := func(name string) string {
		if name == "COUNTERSIGN_CONFIG" {
			return file
		}
		return getenv(name)
	}
	cfg, err := LoadConfig(env)
	if err != nil {
		fmt.Fprintf(stderr, "countersign config check: %v\n", err)
		return 1
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "countersign config check: %s has problems:\n%v\n", file, err)
		return 1
	}
	var doc yaml.Node
	if err := doc.Encode(cfg.File); err != nil {
		fmt.Fprintf(stderr, "countersign config check: %v\n", err)
		return 1
	}
	pruneZeros(&doc)
	redactSecrets(&doc)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		fmt.Fprintf(stderr, "countersign config check: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "# %s is valid. The effective configuration, defaults filled in, secrets redacted.\n", file)
	fmt.Fprintf(stdout, "# environment: %s\n", describeEnvironment(cfg))
	_, _ = stdout.Write(out)
	return 0
}

// pruneZeros drops the fields left at their zero value (empty, null, 0,
// false, 0s): the file would say the same by leaving them out, and an
// explicitly empty list can mean something else (slack.lookup_allowed: []
// lets nobody look up), so printing them would change the configuration.
func pruneZeros(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			pruneZeros(n.Content[i+1])
			if !isZero(n.Content[i+1]) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
		return
	}
	for _, c := range n.Content {
		pruneZeros(c)
	}
}

func isZero(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		return len(n.Content) == 0
	case yaml.ScalarNode:
		switch n.Value {
		case "", "null", "0", "0s", "false":
			return n.Tag != "!!str" || n.Value == ""
		}
	}
	return false
}

// redactSecrets replaces the value of every field that holds a secret (a
// callback's or a dispatch's secret, and every dispatch header, which is
// where credentials to providers go) in an encoded configuration.
func redactSecrets(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i].Value, n.Content[i+1]
			switch {
			case key == "secret" || key == "secrets":
				redactAll(value)
				continue
			case key == "headers":
				redactAll(value)
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

// describeEnvironment says which settings from the environment serve would
// use, naming secrets only as set or unset.
func describeEnvironment(c *Config) string {
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

// redactURL drops a database URL's password.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
