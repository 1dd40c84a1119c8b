package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/identity"
)

// DefaultConsoleSessionTTL is how long a console sign-in lasts when the
// file does not say.
const DefaultConsoleSessionTTL = 8 * time.Hour

// maxConsoleSessionTTL bounds a sign-in: a reviewer who leaves signs in
// again at least once a week.
const maxConsoleSessionTTL = 7 * 24 * time.Hour

// ConsoleConfig is the review console behind OpenID Connect that serve
// mounts at /console/ (docs/CONSOLE.md). It is off while Issuer is empty.
type ConsoleConfig struct {
	// Issuer is the identity provider's issuer URL, where
	// /.well-known/openid-configuration is found.
	Issuer string `yaml:"issuer"`
	// ClientID and ClientSecret are the console's client at the provider;
	// the secret may be ${VAR}, and config check prints it redacted.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
	// RedirectURL is the console's public callback, …/console/callback, as
	// registered at the provider.
	RedirectURL string `yaml:"redirect_url"`
	// GroupsClaim names the ID token's claim that lists the reviewer's IdP
	// groups (often "groups"); a listed group "finance" makes the reviewer a
	// member of oidc:group:finance. Empty: no group comes from the token.
	GroupsClaim string `yaml:"groups_claim"`
	// Groups list members of oidc:group:<name> by hand, beside the claim:
	// {finance: [oidc:alice@example.com]}.
	Groups map[string][]string `yaml:"groups"`
	// SessionTTL is how long a sign-in lasts (default 8h).
	SessionTTL time.Duration `yaml:"session_ttl"`
}

// Enabled reports whether the console is configured.
func (c ConsoleConfig) Enabled() bool { return c.Issuer != "" }

// TTL is SessionTTL or its default.
func (c ConsoleConfig) TTL() time.Duration {
	if c.SessionTTL == 0 {
		return DefaultConsoleSessionTTL
	}
	return c.SessionTTL
}

// consoleGroupName is what may follow oidc:group:, as an id's value may hold.
var consoleGroupName = regexp.MustCompile(`^[!-~]+$`)

// Validate reports every problem of the console's settings, each naming
// its field; a console with no issuer is off, and must set nothing else.
func (c ConsoleConfig) Validate() error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !c.Enabled() {
		if c.ClientID != "" || c.ClientSecret != "" || c.RedirectURL != "" || c.GroupsClaim != "" || len(c.Groups) > 0 || c.SessionTTL != 0 {
			add("console.issuer is not set, so the console is off, but other console settings are: set issuer (the identity provider's URL), or remove the console section")
		}
		return joinConsole(errs)
	}
	if u, err := url.Parse(c.Issuer); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackURLHost(u))) {
		add("console.issuer %q must be the identity provider's https URL (http only on a loopback address, for a test)", c.Issuer)
	}
	if c.ClientID == "" {
		add("console.client_id is not set: give the client id the identity provider issued for the console")
	}
	if c.ClientSecret == "" {
		add("console.client_secret is not set: give the client's secret, e.g. ${COUNTERSIGN_CONSOLE_CLIENT_SECRET}")
	}
	if u, err := url.Parse(c.RedirectURL); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackURLHost(u))) {
		add("console.redirect_url %q must be the console's public https URL ending in /console/callback (http only on a loopback address)", c.RedirectURL)
	} else if u.Path != "/console/callback" || u.RawQuery != "" || u.Fragment != "" {
		add("console.redirect_url %q must end in /console/callback, with no query: that is where serve mounts the callback", c.RedirectURL)
	}
	if c.GroupsClaim != "" && strings.TrimSpace(c.GroupsClaim) != c.GroupsClaim {
		add("console.groups_claim %q has spaces around it", c.GroupsClaim)
	}
	names := make([]string, 0, len(c.Groups))
	for name := range c.Groups {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !consoleGroupName.MatchString(name) || len(identity.OIDCGroupPrefix+name) > identity.MaxLen-len("oidc:") {
			add("console.groups: %q is not a group name: use printable characters without spaces", name)
		}
		if len(c.Groups[name]) == 0 {
			add("console.groups.%s lists nobody: list its members (oidc:<email or subject>) or remove it", name)
		}
		for _, m := range c.Groups[name] {
			id, err := identity.ParsePerson(m)
			switch {
			case err != nil || id.Scheme != identity.OIDC:
				add("console.groups.%s: %q is not a person signed in through the console: write oidc:<email> or oidc:<subject>", name, m)
			case id.IsGroup():
				add("console.groups.%s: %q is a group: list people, not groups", name, m)
			case strings.Contains(id.Value, "@") && strings.ToLower(id.Value) != id.Value:
				add("console.groups.%s: %q has upper-case letters: the console names a reviewer by their email in lower case", name, m)
			}
		}
	}
	switch {
	case c.SessionTTL < 0:
		add("console.session_ttl %s is negative", c.SessionTTL)
	case c.SessionTTL > 0 && c.SessionTTL < time.Minute:
		add("console.session_ttl %s is shorter than a minute: a reviewer could not finish a decision", c.SessionTTL)
	case c.SessionTTL > maxConsoleSessionTTL:
		add("console.session_ttl %s is longer than %s: a sign-in should not outlive a week", c.SessionTTL, maxConsoleSessionTTL)
	}
	return joinConsole(errs)
}

func joinConsole(errs []string) error {
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = errors.New(e)
	}
	return errors.Join(out...)
}

// loopbackURLHost reports whether u's host is localhost or a loopback address.
func loopbackURLHost(u *url.URL) bool {
	h := u.Hostname()
	if strings.EqualFold(h, "localhost") {
		return true
	}
	return strings.HasPrefix(h, "127.") || h == "::1"
}
