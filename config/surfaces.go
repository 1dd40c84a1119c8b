package config

import (
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
)

// EmailConfig is the email review surface (docs/EMAIL.md): the SMTP server
// its messages go through, and where the links in them point. Unset
// (no smtp.addr): no email surface.
type EmailConfig struct {
	SMTP SMTPConfig `yaml:"smtp"`
	// LinkBase is the https URL the approve and reject links start with:
	// countersign's address as reviewers reach it.
	LinkBase string `yaml:"link_base"`
	// LinkTTL is how long a link may be used (default 24h), and never past
	// its request's expiry.
	LinkTTL time.Duration `yaml:"link_ttl"`
}

// SMTPConfig is the server messages are submitted to.
type SMTPConfig struct {
	Addr     string `yaml:"addr"` // host:port
	Username string `yaml:"username"`
	// Password may be ${VAR}; a secret: never logged, redacted by config check.
	Password string `yaml:"password"`
	From     string `yaml:"from"`
	// StartTLS is required (default: a server without STARTTLS gets no
	// message) or opportunistic (plaintext when the server offers no
	// STARTTLS; never with credentials, unless the server is loopback).
	StartTLS string `yaml:"starttls"`
}

// Surface names and the email surface's defaults.
const (
	SurfaceSlack = "slack"
	SurfaceEmail = "email"
	SurfaceTeams = "teams"
	// SurfaceConsole is pulled, not pushed: the console lists the
	// requests of the tools that use it, and posts no card.
	SurfaceConsole = "console"

	StartTLSRequired      = "required"
	StartTLSOpportunistic = "opportunistic"

	DefaultEmailLinkTTL = 24 * time.Hour
)

// Enabled reports whether the email surface is configured.
func (e EmailConfig) Enabled() bool { return e.SMTP.Addr != "" }

// WithDefaults is e with its defaults filled in.
func (e EmailConfig) WithDefaults() EmailConfig {
	if e.LinkTTL == 0 {
		e.LinkTTL = DefaultEmailLinkTTL
	}
	if e.SMTP.StartTLS == "" {
		e.SMTP.StartTLS = StartTLSRequired
	}
	return e
}

// ToolSurfaces are the review surfaces a tool's requests go to: its
// surfaces list, or Slack when Slack is configured (as before the list)
// and the console when it is configured (the console shows every tool
// without a list, as before the list).
func (c *Config) ToolSurfaces(t ToolConfig) []string {
	if t.Surfaces != nil {
		return t.Surfaces
	}
	if c.SlackBotToken != "" {
		if c.File.Console.Enabled() {
			return []string{SurfaceSlack, SurfaceConsole}
		}
		return []string{SurfaceSlack}
	}
	return nil
}

// validateSurfaces reports a bad email section, and a tool's surfaces list
// naming an unknown surface, one named twice, or one not configured.
func (c *Config) validateSurfaces() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	e := c.File.Email
	if e.Enabled() {
		if host, port, err := net.SplitHostPort(e.SMTP.Addr); err != nil || host == "" || port == "" {
			add("email.smtp.addr %q must be host:port", e.SMTP.Addr)
		}
		switch e.SMTP.StartTLS {
		case "", StartTLSRequired, StartTLSOpportunistic:
		default:
			add("email.smtp.starttls is %q: use required or opportunistic, or leave it unset (required)", e.SMTP.StartTLS)
		}
		if (e.SMTP.Username == "") != (e.SMTP.Password == "") {
			add("email.smtp: set both username and password, or neither")
		}
		if a, err := mail.ParseAddress(e.SMTP.From); err != nil || a.Address == "" {
			add("email.smtp.from %q must be an address, such as countersign@example.com", e.SMTP.From)
		}
		if u, err := url.Parse(e.LinkBase); err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			add("email.link_base %q must be an https URL without query: the address reviewers open countersign at", e.LinkBase)
		}
		if e.LinkTTL < 0 || (e.LinkTTL > 0 && e.LinkTTL < time.Minute) || e.LinkTTL > 30*24*time.Hour {
			add("email.link_ttl %s must be between 1m and 720h, or unset (24h)", e.LinkTTL)
		}
	} else if e != (EmailConfig{}) {
		add("email: set smtp.addr, or remove the email section")
	}
	errs = append(errs, c.validateTeams()...)
	for name, t := range c.File.Tools {
		errs = append(errs, c.validateToolSurfaces("tools."+name, t)...)
	}
	for name, u := range c.File.Upstreams {
		errs = append(errs, c.validateToolSurfaces("upstreams."+name, u.Review)...)
	}
	return errs
}

func (c *Config) validateToolSurfaces(where string, t ToolConfig) []error {
	var errs []error
	for i, s := range t.Surfaces {
		switch {
		case s != SurfaceSlack && s != SurfaceEmail && s != SurfaceTeams && s != SurfaceConsole:
			errs = append(errs, fmt.Errorf("%s.surfaces[%d] is %q: use slack, teams, email or console", where, i, s))
		case slices.Index(t.Surfaces, s) != i:
			errs = append(errs, fmt.Errorf("%s.surfaces lists %s twice", where, s))
		case s == SurfaceEmail && !c.File.Email.Enabled():
			errs = append(errs, fmt.Errorf("%s.surfaces lists email, but the email section has no smtp.addr", where))
		case s == SurfaceTeams && !c.File.Teams.Enabled():
			errs = append(errs, fmt.Errorf("%s.surfaces lists teams, but the teams section has no app_id", where))
		case s == SurfaceSlack && c.SlackBotToken == "":
			errs = append(errs, fmt.Errorf("%s.surfaces lists slack, but SLACK_BOT_TOKEN is not set", where))
		case s == SurfaceConsole && !c.File.Console.Enabled():
			errs = append(errs, fmt.Errorf("%s.surfaces lists console, but the console section is not configured", where))
		}
	}
	if t.Surfaces != nil && len(t.Surfaces) == 0 {
		errs = append(errs, fmt.Errorf("%s.surfaces is empty: list slack, teams, email or console, or remove it (slack when Slack is configured)", where))
	}
	return errs
}

// ToolUses reports whether the requests of tool (a configured tool, or an
// upstream's gated tool, <upstream>__<tool>) go to surface.
func (c *Config) ToolUses(tool, surface string) bool {
	t, ok := c.File.Tools[tool]
	if !ok {
		upstream, _, cut := strings.Cut(tool, "__")
		u, found := c.File.Upstreams[upstream]
		if !cut || !found {
			return false
		}
		t = u.Review
	}
	return slices.Contains(c.ToolSurfaces(t), surface)
}

// TeamsConfig is the Microsoft Teams review surface (docs/TEAMS.md): the
// bot's Azure registration, where the Bot Framework's tokens are checked
// against, and the conversation each tool's cards go to. Unset (no
// app_id): no Teams surface.
type TeamsConfig struct {
	AppID string `yaml:"app_id"`
	// AppPassword is the registration's client secret; may be ${VAR}; a
	// secret: never logged, redacted by config check.
	AppPassword string `yaml:"app_password"`
	// OpenIDMetadata is where the keys that sign the Bot Framework's
	// tokens are found (default DefaultTeamsOpenIDMetadata).
	OpenIDMetadata string `yaml:"openid_metadata"`
	// TokenURL is where the bot gets its own tokens for the connector
	// (default DefaultTeamsTokenURL).
	TokenURL string `yaml:"token_url"`
	// ServiceURL is the Bot Connector cards are posted to (default
	// DefaultTeamsServiceURL).
	ServiceURL string `yaml:"service_url"`
	// Conversations maps a tool (or an upstream's gated tool,
	// <upstream>__<tool>, or the upstream's name for all of them) to the
	// Teams conversation (channel) id its cards are posted in.
	Conversations map[string]string `yaml:"conversations"`
}

// The Teams surface's defaults: the Bot Framework's public endpoints.
const (
	DefaultTeamsOpenIDMetadata = "https://login.botframework.com/v1/.well-known/openidconfiguration"
	DefaultTeamsTokenURL       = "https://login.microsoftonline.com/botframework.com/oauth2/v2.0/token"
	DefaultTeamsServiceURL     = "https://smba.trafficmanager.net/teams/"
)

// Enabled reports whether the Teams surface is configured.
func (t TeamsConfig) Enabled() bool { return t.AppID != "" }

// WithDefaults is t with its defaults filled in.
func (t TeamsConfig) WithDefaults() TeamsConfig {
	if t.OpenIDMetadata == "" {
		t.OpenIDMetadata = DefaultTeamsOpenIDMetadata
	}
	if t.TokenURL == "" {
		t.TokenURL = DefaultTeamsTokenURL
	}
	if t.ServiceURL == "" {
		t.ServiceURL = DefaultTeamsServiceURL
	}
	return t
}

// Conversation is the Teams conversation tool's cards go to, or "".
func (t TeamsConfig) Conversation(tool string) string {
	if id, ok := t.Conversations[tool]; ok {
		return id
	}
	if upstream, _, cut := strings.Cut(tool, "__"); cut {
		return t.Conversations[upstream]
	}
	return ""
}

// validateTeams reports a bad teams section, and a tool listing teams
// without a conversation.
func (c *Config) validateTeams() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	t := c.File.Teams
	if !t.Enabled() {
		if t.AppPassword != "" || t.OpenIDMetadata != "" || t.TokenURL != "" || t.ServiceURL != "" || len(t.Conversations) > 0 {
			add("teams: set app_id, or remove the teams section")
		}
		return errs
	}
	if t.AppPassword == "" {
		add("teams.app_password is not set: the bot's client secret (use ${VAR})")
	}
	for _, f := range []struct{ name, value string }{{"openid_metadata", t.OpenIDMetadata}, {"token_url", t.TokenURL}, {"service_url", t.ServiceURL}} {
		if f.value == "" {
			continue
		}
		if u, err := url.Parse(f.value); err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopbackHost(u.Hostname()))) {
			add("teams.%s %q must be an https URL (http only to a loopback address)", f.name, f.value)
		}
	}
	for name, tc := range c.File.Tools {
		if slices.Contains(tc.Surfaces, SurfaceTeams) && t.Conversation(name) == "" {
			add("tools.%s.surfaces lists teams, but teams.conversations has no conversation for it", name)
		}
	}
	for name, u := range c.File.Upstreams {
		if slices.Contains(u.Review.Surfaces, SurfaceTeams) && t.Conversations[name] == "" {
			add("upstreams.%s.surfaces lists teams, but teams.conversations has no conversation for it", name)
		}
	}
	return errs
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
