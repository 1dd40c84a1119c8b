package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/callback"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/hook"
	"github.com/countersign/countersign/identity"
)

// Config is everything serve needs, from the environment and the YAML file.
type Config struct {
	DatabaseURL string
	Listen      string
	// AdminListen, when set, is a listener of its own for /metrics,
	// /healthz and /readyz, which then leave the public one.
	AdminListen        string
	ConfigPath         string
	SlackBotToken      string
	SlackSigningSecret string
	SlackAppToken      string
	SlackAPIURL        string
	// SlackCheck is COUNTERSIGN_SLACK_CHECK: what start does when Slack
	// refuses the bot token ("fail", the default, or "warn").
	SlackCheck string
	// DispatchSecret and SlackSigningSecret are the environment's values,
	// comma-separated secrets (DispatchSecrets, SlackSigningSecrets).
	DispatchSecret string
	// ReceiptKey and ReceiptKeyFile are COUNTERSIGN_RECEIPT_KEY and
	// COUNTERSIGN_RECEIPT_KEY_FILE: the PEM key that signs agent-executed
	// tools' receipts, or the file holding it (package receipt).
	ReceiptKey     string
	ReceiptKeyFile string
	// DataDir holds the embedded store and the local agent token; set
	// when either is needed.
	DataDir string
	// InboxReviewer is the user id the local review inbox decides as.
	InboxReviewer string
	// LogFormat is COUNTERSIGN_LOG_FORMAT: "text", "json", or empty for
	// text on a terminal and JSON otherwise.
	LogFormat string
	// InboxSetting is COUNTERSIGN_INBOX: "on", "off", or empty for on
	// exactly when Slack is not configured.
	InboxSetting string
	// DrainDelaySetting is COUNTERSIGN_DRAIN_DELAY (DrainDelay, drain.go).
	DrainDelaySetting string

	File FileConfig

	// dataDirErr says why no data directory could be found, when one is needed.
	dataDirErr error
	// fileUnreadable is set when the file is not YAML at all: nothing in it
	// was read, so what it lacks is not reported on top of why.
	fileUnreadable bool
	// positions holds the line of every field path in the file, for the
	// problems found after decoding.
	positions map[string]*yaml.Node
	// missingVars lists ${VAR} references with no value in the environment.
	missingVars []string
	// effectSchemas are the tools' compiled effect schemas, by tool; Validate
	// compiles them.
	effectSchemas map[string]*approvals.EffectSchema
	// fileErrs are the configuration file's own problems (YAMLError, or
	// its syntax), reported by Validate with the others.
	fileErrs []error
}

// FileConfig is the YAML file named by COUNTERSIGN_CONFIG.
type FileConfig struct {
	Slack    SlackConfig           `yaml:"slack"`
	Executor ExecutorConfig        `yaml:"executor"`
	Agents   []AgentConfig         `yaml:"agents"`
	Tools    map[string]ToolConfig `yaml:"tools"`
	// Upstreams are MCP servers whose tools countersign gates (the MCP
	// gateway, docs/GATEWAY.md).
	Upstreams map[string]UpstreamConfig `yaml:"upstreams"`
	// Callbacks tunes the delivery of agents' callbacks.
	Callbacks CallbacksConfig `yaml:"callbacks"`
	// Retention says how long settled requests are kept.
	Retention RetentionConfig `yaml:"retention"`
	// PreToolUse maps a coding agent's tools for its permission hooks.
	PreToolUse PreToolUseConfig `yaml:"pretooluse"`
	Console    ConsoleConfig    `yaml:"console"` // the review console behind OpenID Connect (docs/CONSOLE.md)
	Email      EmailConfig      `yaml:"email"`   // the email review surface (surfaces.go)
	Teams      TeamsConfig      `yaml:"teams"`   // the Microsoft Teams review surface (surfaces.go)
}

// CallbacksConfig tunes callback delivery; zero values are the defaults of
// package callback.
type CallbacksConfig struct {
	Timeout   time.Duration `yaml:"timeout"`    // one POST to an agent
	Poll      time.Duration `yaml:"poll"`       // how often due deliveries are looked for
	RetryBase time.Duration `yaml:"retry_base"` // the first retry's delay, doubled per retry up to 1h
}

// CallbackConfig is where an agent's callbacks go: an absolute http or
// https URL, and the secret that signs them (it may be ${VAR}), or a list
// of them while one is rotated: each one signs.
type CallbackConfig struct {
	URL    string       `yaml:"url"`
	Secret StringOrList `yaml:"secret"`
}

// SlackConfig is where cards go and who may look requests up.
type SlackConfig struct {
	Channel string `yaml:"channel"`
	// LookupAllowed: users, user groups and channels that may use the
	// slash command's lookups; unset: everyone in the workspace.
	LookupAllowed []string `yaml:"lookup_allowed"`
	// Admins: users and user groups who may list and revoke everyone's
	// standing grants with the slash command.
	Admins []string `yaml:"admins"`
}

// ExecutorConfig holds the cron schedules of the background sweeps.
type ExecutorConfig struct {
	DispatchSchedule  string `yaml:"dispatch_schedule"`
	ReconcileSchedule string `yaml:"reconcile_schedule"`
	ExpirySchedule    string `yaml:"expiry_schedule"`
	CardSchedule      string `yaml:"card_schedule"`
	// ReminderSchedule is when the sweep looks for pending requests due a
	// reminder or an escalation.
	ReminderSchedule string `yaml:"reminder_schedule"`
}

// AgentConfig names an agent and the sha256 hex of its bearer token, or a
// list of them while a token is rotated: any one identifies the agent. An
// admin agent reads and cancels every agent's requests.
type AgentConfig struct {
	Name        string       `yaml:"name"`
	TokenSHA256 StringOrList `yaml:"token_sha256"`
	Admin       bool         `yaml:"admin"`
	// Owners are the people (identities: users or user groups) who own the
	// agent: they may not approve its requests.
	Owners []string `yaml:"owners"`
	// Callback, when set, receives the agent's requests' settled and
	// needs-review callbacks.
	Callback *CallbackConfig `yaml:"callback"`
}

// ToolConfig is one tool an agent may ask to use.
type ToolConfig struct {
	Channel   string         `yaml:"channel"`
	Surfaces  []string       `yaml:"surfaces"` // review surfaces: slack, teams, email, console (surfaces.go)
	Approvers []string       `yaml:"approvers"`
	Dispatch  DispatchConfig `yaml:"dispatch"`
	// Execute is "agent" when the agent performs the tool's approved
	// writes itself, with a receipt, instead of countersign's dispatch;
	// OutcomeTimeout is how long one waits for its outcome before it needs
	// review (default 1h).
	Execute        string        `yaml:"execute"`
	OutcomeTimeout time.Duration `yaml:"outcome_timeout"`
	KeyAware       bool          `yaml:"key_aware"`
	// VerifyAfter is how long a key-unaware tool's unknown outcome settles
	// before it is verified (default: 30s or twice the dispatch timeout).
	VerifyAfter  time.Duration   `yaml:"verify_after"`
	Verify       *EndpointConfig `yaml:"verify"`
	Precondition *EndpointConfig `yaml:"precondition"`
	MaxAttempts  int             `yaml:"max_attempts"`
	ClaimTimeout time.Duration   `yaml:"claim_timeout"`
	ApprovalTTL  time.Duration   `yaml:"approval_ttl"`
	RequestTTL   time.Duration   `yaml:"request_ttl"`
	Reversible   bool            `yaml:"reversible"`
	// Approvals is how many distinct approvers a round needs (default 1);
	// 0 allows the tool's writes by policy. Deny refuses them, with the
	// reason the agent is given; Notify posts a card without buttons for a
	// write the policy allows.
	Approvals *int    `yaml:"approvals"`
	Deny      *string `yaml:"deny"`
	Notify    bool    `yaml:"notify"`
	// Tiers set a request's policy by its effect; the first match that is
	// not a shadow wins.
	Tiers []TierConfig `yaml:"tiers"`
	// Grants, when set, lets an approver allow similar writes for a while.
	Grants *GrantsConfig `yaml:"grants"`
	// RejectReason: off, optional (default) or required.
	RejectReason string `yaml:"reject_reason"`
	// Description tells agents what the tool does (GET /v1/tools).
	Description string `yaml:"description"`
	// EffectSchema is the JSON Schema every effect must satisfy: inline, or
	// the path of a JSON file (relative to the configuration file).
	EffectSchema *EffectSchemaConfig `yaml:"effect_schema"`
	// RemindAfter and EscalateAfter are how long a pending round waits
	// before one thread reply mentions its approvers, then EscalateTo.
	RemindAfter           time.Duration `yaml:"remind_after"`
	EscalateAfter         time.Duration `yaml:"escalate_after"`
	EscalateTo            []string      `yaml:"escalate_to"`
	EscalateAddsApprovers bool          `yaml:"escalate_adds_approvers"`
	// Preview, when set, is asked what a write changes before its card is
	// posted; BusinessID names the effect's field that identifies what it
	// touches (preview.go).
	Preview    *PreviewConfig `yaml:"preview"`
	BusinessID string         `yaml:"business_id"`
}

// DispatchConfig is where and how the executor sends an approved write.
type DispatchConfig struct {
	Method  string            `yaml:"method"`
	URL     string            `yaml:"url"`
	Timeout time.Duration     `yaml:"timeout"`
	Headers map[string]string `yaml:"headers"`
	// Secret signs this tool's dispatches instead of
	// COUNTERSIGN_DISPATCH_SECRET (it may be ${VAR}), or a list of them
	// while one is rotated: each one signs. Never logged.
	Secret StringOrList `yaml:"secret"`
}

// EndpointConfig is a URL the executor reads; {key} is replaced by the key.
type EndpointConfig struct {
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
}

// Values of COUNTERSIGN_SLACK_CHECK: what serve does when Slack refuses the
// bot token at start.
const (
	SlackCheckFail = "fail" // the default: refuse to start, saying why
	SlackCheckWarn = "warn" // start anyway; cards wait in the outbox until the token works
)

// DatabaseURLForm shows the form COUNTERSIGN_DATABASE_URL takes.
const DatabaseURLForm = "postgres://user:password@host:5432/dbname?sslmode=require"

// Defaults applied where the file is silent.
const (
	defaultListen = ":8080"
	// localListen is the local run's: without a file, serve listens on
	// this machine only.
	localListen = "127.0.0.1:8080"
	// DefaultInboxReviewer is who decides through the inbox unless
	// COUNTERSIGN_INBOX_REVIEWER names someone else.
	DefaultInboxReviewer     = "local:reviewer"
	defaultDispatchSchedule  = "@every 1s"
	defaultReconcileSchedule = "@every 15s"
	defaultExpirySchedule    = "@every 30s"
	defaultCardSchedule      = "@every 1m"
	defaultReminderSchedule  = "@every 30s"
	defaultDispatchTimeout   = 10 * time.Second
	defaultClaimTimeout      = 2 * time.Minute
	defaultApprovalTTL       = 24 * time.Hour
)

// Load reads the environment and, if COUNTERSIGN_CONFIG names one, the
// YAML file. Unknown YAML keys are errors; ${VAR} in string values expands
// from the environment.
func Load(getenv func(string) string) (*Config, error) {
	cfg := &Config{
		DatabaseURL:        getenv("COUNTERSIGN_DATABASE_URL"),
		Listen:             getenv("COUNTERSIGN_LISTEN"),
		AdminListen:        getenv("COUNTERSIGN_ADMIN_LISTEN"),
		ConfigPath:         getenv("COUNTERSIGN_CONFIG"),
		SlackBotToken:      getenv("SLACK_BOT_TOKEN"),
		SlackSigningSecret: getenv("SLACK_SIGNING_SECRET"),
		SlackAppToken:      getenv("SLACK_APP_TOKEN"),
		SlackAPIURL:        getenv("COUNTERSIGN_SLACK_API_URL"),
		SlackCheck:         getenv("COUNTERSIGN_SLACK_CHECK"),
		DispatchSecret:     getenv("COUNTERSIGN_DISPATCH_SECRET"),
		ReceiptKey:         getenv("COUNTERSIGN_RECEIPT_KEY"),
		ReceiptKeyFile:     getenv("COUNTERSIGN_RECEIPT_KEY_FILE"),
		InboxReviewer:      orDefault(getenv("COUNTERSIGN_INBOX_REVIEWER"), DefaultInboxReviewer),
		InboxSetting:       getenv("COUNTERSIGN_INBOX"),
		LogFormat:          getenv("COUNTERSIGN_LOG_FORMAT"),
		DrainDelaySetting:  getenv("COUNTERSIGN_DRAIN_DELAY"),
	}
	if cfg.Listen == "" {
		cfg.Listen = defaultListen
		if cfg.Local() {
			cfg.Listen = localListen
		}
	}
	if cfg.DatabaseURL == "" || cfg.Local() {
		cfg.DataDir, cfg.dataDirErr = DataDir(getenv)
	}
	if cfg.ConfigPath != "" {
		raw, err := os.ReadFile(cfg.ConfigPath)
		if err != nil {
			return nil, fmt.Errorf("reading COUNTERSIGN_CONFIG: %w", err)
		}
		cfg.parseFile(raw, getenv)
	}
	return cfg.WithDefaults(), nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// parseFile expands ${VAR} inside scalar values only (never in the raw text,
// so a value cannot inject YAML structure) and decodes strictly. Problems
// with the file are kept for Validate, which reports them with every other
// problem; what could be read is decoded, so the rest is checked too.
func (c *Config) parseFile(raw []byte, getenv func(string) string) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		c.fileErrs = append(c.fileErrs, fmt.Errorf("%s: %s", c.ConfigPath, strings.TrimPrefix(err.Error(), "yaml: ")))
		c.fileUnreadable = true
		return
	}
	var expand func(n *yaml.Node)
	expand = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				v := getenv(name)
				if v == "" {
					c.missingVars = append(c.missingVars, name)
				}
				return v
			})
		}
		for _, child := range n.Content {
			expand(child)
		}
	}
	expand(&doc)
	c.positions = yamlPositions(&doc)
	problems := checkYAML(&doc, reflect.TypeFor[FileConfig](), "")
	for _, p := range problems {
		c.fileErrs = append(c.fileErrs, fmt.Errorf("%s: %w", c.ConfigPath, p))
	}
	// An empty file decodes to the defaults. checkYAML has named every value
	// the decoder would refuse, so its own (Go-typed) words are needed only
	// if the two ever disagree.
	if len(doc.Content) > 0 {
		if err := doc.Decode(&c.File); err != nil && len(problems) == 0 {
			c.fileErrs = append(c.fileErrs, fmt.Errorf("%s: %w", c.ConfigPath, err))
		}
	}
}

// WithDefaults returns a copy of c with defaults where the file is silent;
// c is left as it is.
func (c *Config) WithDefaults() *Config {
	d := *c
	d.File.Tools = make(map[string]ToolConfig, len(c.File.Tools))
	e := &d.File.Executor
	e.DispatchSchedule = orDefault(e.DispatchSchedule, defaultDispatchSchedule)
	e.ReconcileSchedule = orDefault(e.ReconcileSchedule, defaultReconcileSchedule)
	e.ExpirySchedule = orDefault(e.ExpirySchedule, defaultExpirySchedule)
	e.CardSchedule = orDefault(e.CardSchedule, defaultCardSchedule)
	e.ReminderSchedule = orDefault(e.ReminderSchedule, defaultReminderSchedule)
	d.File.Retention.Schedule = orDefault(d.File.Retention.Schedule, DefaultRetentionSchedule)
	for name, t := range c.File.Tools {
		d.File.Tools[name] = withToolDefaults(t, c.File.Slack.Channel)
	}
	if c.File.Upstreams != nil {
		d.File.Upstreams = make(map[string]UpstreamConfig, len(c.File.Upstreams))
		for name, u := range c.File.Upstreams {
			d.File.Upstreams[name] = upstreamWithDefaults(u, c.File.Slack.Channel)
		}
	}
	return &d
}

// withToolDefaults is t with the defaults of what it leaves out; its cards
// go to slackChannel unless it names its own.
func withToolDefaults(t ToolConfig, slackChannel string) ToolConfig {
	t.Dispatch.Method = strings.ToUpper(orDefault(t.Dispatch.Method, "POST"))
	if t.Dispatch.Timeout == 0 {
		t.Dispatch.Timeout = defaultDispatchTimeout
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = approvals.DefaultMaxAttempts
	}
	if t.ClaimTimeout == 0 {
		t.ClaimTimeout = defaultClaimTimeout
	}
	if t.ApprovalTTL == 0 {
		t.ApprovalTTL = defaultApprovalTTL
	}
	if t.RequestTTL == 0 {
		t.RequestTTL = approvals.DefaultRequestTTL
	}
	if t.Channel == "" {
		t.Channel = slackChannel
	}
	// An agent told why it was refused can change its plan; a reviewer
	// may still leave the reason out.
	t.RejectReason = orDefault(t.RejectReason, string(approvals.ReasonOptional))
	if t.Execute == approvals.ExecuteAgent && t.OutcomeTimeout == 0 {
		t.OutcomeTimeout = approvals.DefaultOutcomeTimeout
	}
	return t
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Validate reports every problem at once, in sentences an operator can act
// on: its own and those of each part of the file (errors.Join).
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	errs = append(errs, c.fileErrs...)
	if c.dataDirErr != nil {
		errs = append(errs, c.dataDirErr)
	}
	for _, name := range c.missingVars {
		add("the config refers to ${%s}, but %s is not set in the environment", name, name)
	}
	if c.DatabaseURL != "" && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		add("COUNTERSIGN_DATABASE_URL is not a PostgreSQL URL: write it as %s, or unset it for the embedded store", DatabaseURLForm)
	}
	switch c.LogFormat {
	case "", "text", "json":
	default:
		add("COUNTERSIGN_LOG_FORMAT is %q: use text or json, or leave it unset (text on a terminal, else json)", c.LogFormat)
	}
	switch c.SlackCheck {
	case "", SlackCheckFail, SlackCheckWarn:
	default:
		add("COUNTERSIGN_SLACK_CHECK is %q: use fail or warn, or leave it unset (fail)", c.SlackCheck)
	}
	switch c.InboxSetting {
	case "", "on", "off":
	default:
		add("COUNTERSIGN_INBOX is %q: use on, off, or leave it unset (on when Slack is not configured)", c.InboxSetting)
	}
	if id, err := identity.ParsePerson(c.InboxReviewer); err != nil || id.Scheme != identity.Local {
		add("COUNTERSIGN_INBOX_REVIEWER %q must start with %q, so it never passes for a Slack user", c.InboxReviewer, identity.Local+":")
	}
	errs = append(errs, c.validateSecretLists()...)
	errs = append(errs, c.validateExposure()...)
	errs = append(errs, c.validateDrainDelay()...)
	errs = append(errs, c.validateSurfaces()...)
	if unsigned := c.toolsWithoutASecret(); c.DispatchSecret == "" && len(unsigned) > 0 {
		add("COUNTERSIGN_DISPATCH_SECRET is not set, and %s no dispatch.secret of its own: providers use it to check that a call came through countersign",
			unsigned)
	}
	if c.SlackAppToken != "" && c.SlackBotToken == "" {
		add("SLACK_APP_TOKEN is set but SLACK_BOT_TOKEN is not: Socket Mode needs both")
	}
	if c.SlackBotToken != "" && c.SlackSigningSecret == "" && c.SlackAppToken == "" {
		add("SLACK_BOT_TOKEN is set but SLACK_SIGNING_SECRET is not: interactions cannot be verified")
	}
	if c.SlackAPIURL != "" {
		if u, err := url.Parse(c.SlackAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			add("COUNTERSIGN_SLACK_API_URL must be an http or https URL")
		}
	}
	errs = append(errs, c.File.Executor.Validate(), c.File.Slack.Validate(), c.File.Retention.Validate())
	errs = append(errs, c.File.Console.Validate())

	// A local run whose data directory is missing has no agent or tool only
	// because the demo's could not be set up, and a file that is not YAML
	// none because nothing was read: the error above is the one to act on.
	localUnset := (c.Local() && c.dataDirErr != nil) || c.fileUnreadable
	if len(c.File.Agents) == 0 && !localUnset {
		add("agents: no agent is configured, so nothing can post to the hook; add one with a name and token_sha256")
	}
	seen := map[string]bool{}
	for i, a := range c.File.Agents {
		if a.Name != "" && seen[a.Name] {
			add("agents[%d]: the name %q is used twice", i, a.Name)
		}
		seen[a.Name] = true
		if err := a.Validate(); err != nil {
			add("agents[%d]: %w", i, err)
		}
	}

	if len(c.File.Tools) == 0 && len(c.File.Upstreams) == 0 && !localUnset {
		add("tools: no tool is configured, so every intent would be refused as unknown_tool")
	}
	for name, t := range c.File.Tools {
		errs = append(errs, t.Validate(name, c.SlackBotToken != ""))
	}
	errs = append(errs, c.validateUpstreams()...)
	errs = append(errs, c.compileEffectSchemas(), c.checkTypedToolNames())
	errs = append(errs, c.validatePreToolUse()...)
	errs = append(errs, c.validatePreviewSecrets()...)
	return errors.Join(withLines(c.ConfigPath, c.positions, errs)...)
}

// toolsWithoutASecret names the tools that sign with
// COUNTERSIGN_DISPATCH_SECRET, for the sentence that says it is missing:
// "tools.a has" or "tools.a and tools.b have".
func (c *Config) toolsWithoutASecret() string {
	var names []string
	for name, t := range c.File.Tools {
		if len(t.Dispatch.Secret) == 0 && t.Execute != approvals.ExecuteAgent {
			names = append(names, "tools."+name)
		}
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0] + " has"
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " have"
}

// Validate reports every schedule that is not a cron schedule.
func (e ExecutorConfig) Validate() error {
	var errs []error
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for _, f := range []struct{ field, spec string }{
		{"dispatch_schedule", e.DispatchSchedule},
		{"reconcile_schedule", e.ReconcileSchedule},
		{"expiry_schedule", e.ExpirySchedule},
		{"card_schedule", e.CardSchedule},
		{"reminder_schedule", e.ReminderSchedule},
	} {
		if _, err := parser.Parse(f.spec); err != nil {
			errs = append(errs, fmt.Errorf("executor.%s %q is not a cron schedule (use a 5-field spec or @every 10s): %v", f.field, f.spec, err))
		}
	}
	return errors.Join(errs...)
}

// Validate reports every problem with the lookup list.
func (s SlackConfig) Validate() error {
	var errs []error
	if allowed := s.LookupAllowed; allowed != nil && len(allowed) == 0 {
		errs = append(errs, errors.New("slack.lookup_allowed is empty, so nobody could look requests up; list who may, or remove it to let everyone"))
	}
	for _, id := range s.LookupAllowed {
		if !lookupID.MatchString(id) {
			errs = append(errs, fmt.Errorf("slack.lookup_allowed: %q is not a Slack user id (U…, W…), a user-group id (S…) or a channel id (C…, G…)", id))
		}
	}
	for _, id := range s.Admins {
		if !adminID.MatchString(id) {
			errs = append(errs, fmt.Errorf("slack.admins: %q is not a Slack user id (U…, W…) or a user-group id (S…)", id))
		}
	}
	return errors.Join(errs...)
}

// Validate reports every problem with the agent's name and token hash.
func (a AgentConfig) Validate() error {
	var errs []error
	if a.Name == "" {
		errs = append(errs, errors.New("name is required"))
	}
	if _, err := hook.ParseAgent(a.Name, a.TokenSHA256...); err != nil {
		errs = append(errs, err)
	}
	for _, err := range badIDs(a.Owners) {
		errs = append(errs, fmt.Errorf("owner %v", err))
	}
	if a.Callback != nil {
		if err := a.Callback.target().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// target is the callback as package callback takes it.
func (c *CallbackConfig) target() callback.Target {
	return callback.Target{URL: c.URL, Secrets: c.Secret.bytes()}
}

// CallbackTargets returns the agents' callbacks by agent name; Validate has
// checked them.
func (c *Config) CallbackTargets() map[string]callback.Target {
	targets := map[string]callback.Target{}
	for _, a := range c.File.Agents {
		if a.Callback != nil {
			targets[a.Name] = a.Callback.target()
		}
	}
	return targets
}

// Validate reports every problem with the tool called name; needsChannel is
// whether its cards go to Slack.
func (t ToolConfig) Validate(name string, needsChannel bool) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tools.%s: "+format, append([]any{name}, args...)...))
	}
	if len(t.Approvers) == 0 && t.needsApprovers() {
		add("approvers is empty, so nobody could approve it")
	}
	for _, err := range badIDs(t.Approvers) {
		add("approver %v", err)
	}
	if needsChannel && t.Channel == "" {
		add("no channel for its cards; set tools.%s.channel or slack.channel", name)
	}
	errs = append(errs, t.validateExecute(name)...)
	if t.Execute != approvals.ExecuteAgent && !validHTTPURL(t.Dispatch.URL) {
		add("dispatch.url must be an http or https URL")
	}
	if empty := t.Dispatch.Secret.emptyValue(); empty != "" {
		add("dispatch.secret %s: give each secret a value, or leave dispatch.secret out to sign with COUNTERSIGN_DISPATCH_SECRET", empty)
	}
	switch t.Dispatch.Method {
	case "POST", "PUT", "PATCH", "DELETE":
	default:
		add("dispatch.method %q must be POST, PUT, PATCH or DELETE", t.Dispatch.Method)
	}
	// {key} is escaped for the path or the query, and refused elsewhere
	// (docs/DECISIONS.md, "Executor URLs").
	if t.Verify != nil {
		if _, err := executor.ParseURLTemplate(t.Verify.URL); err != nil {
			add("verify.url: %v", err)
		}
	}
	if t.Precondition != nil {
		if _, err := executor.ParseURLTemplate(t.Precondition.URL); err != nil {
			add("precondition.url: %v", err)
		}
	}
	if t.MaxAttempts < 1 {
		add("max_attempts must be at least 1")
	}
	errs = append(errs, t.validatePolicy(name)...)
	if t.Dispatch.Timeout < 0 || t.ClaimTimeout < 0 || t.ApprovalTTL < 0 || t.RequestTTL < 0 {
		add("durations must be positive")
	}
	if t.ClaimTimeout <= t.Dispatch.Timeout {
		add("claim_timeout (%s) must be longer than dispatch.timeout (%s), or live sends would be declared unknown", t.ClaimTimeout, t.Dispatch.Timeout)
	}
	errs = append(errs, t.validateNudges(name))
	t.validatePreview(add)
	return errors.Join(errs...)
}

// validateNudges reports every problem with the tool's reminder and
// escalation: each must come before the request expires, the reminder
// before the escalation, and an escalation needs someone to go to.
func (t ToolConfig) validateNudges(name string) error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tools.%s: "+format, append([]any{name}, args...)...))
	}
	if t.RemindAfter < 0 || t.EscalateAfter < 0 {
		add("remind_after and escalate_after must be positive")
	}
	if t.RemindAfter > 0 && t.RemindAfter >= t.RequestTTL {
		add("remind_after (%s) must be shorter than request_ttl (%s), or the request expires first", t.RemindAfter, t.RequestTTL)
	}
	if t.EscalateAfter > 0 && t.EscalateAfter >= t.RequestTTL {
		add("escalate_after (%s) must be shorter than request_ttl (%s), or the request expires first", t.EscalateAfter, t.RequestTTL)
	}
	if t.RemindAfter > 0 && t.EscalateAfter > 0 && t.RemindAfter >= t.EscalateAfter {
		add("remind_after (%s) must be shorter than escalate_after (%s)", t.RemindAfter, t.EscalateAfter)
	}
	if t.EscalateAfter > 0 && len(t.EscalateTo) == 0 {
		add("escalate_after is set but escalate_to is empty: list the users or user groups to escalate to")
	}
	if t.EscalateAfter == 0 && (len(t.EscalateTo) > 0 || t.EscalateAddsApprovers) {
		add("escalate_to and escalate_adds_approvers need escalate_after, the wait before escalating")
	}
	for _, err := range badIDs(t.EscalateTo) {
		add("escalate_to %v", err)
	}
	return errors.Join(errs...)
}

// lookupID is a Slack user (U, W), user-group (S) or channel (C; G for
// older private channels) id.
var lookupID = regexp.MustCompile(`^[UWSCG][A-Z0-9]{2,}$`)

// adminID is a Slack user (U, W) or user-group (S) id.
var adminID = regexp.MustCompile(`^[UWS][A-Z0-9]{2,}$`)

func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// DataDirErr says why no data directory could be found, when one is
// needed; Validate reports it too.
func (c *Config) DataDirErr() error { return c.dataDirErr }

// Local reports whether serve runs without a configuration file, on the
// local defaults (see local.go).
func (c *Config) Local() bool { return c.ConfigPath == "" }

// InboxEnabled reports whether serve mounts the local review inbox.
func (c *Config) InboxEnabled() bool {
	switch c.InboxSetting {
	case "on":
		return true
	case "off":
		return false
	}
	return c.SlackBotToken == ""
}

// ReviewTools is what the approvals package needs of each tool.
func (c *Config) ReviewTools() map[string]approvals.Tool {
	tools := make(map[string]approvals.Tool, len(c.File.Tools))
	for name, t := range c.File.Tools {
		verdict, deny := verdictOf(t.Approvals, t.Deny)
		tool := approvals.Tool{
			Name: name, Channel: t.Channel, Approvers: canonical(t.Approvers),
			RequestTTL: t.RequestTTL, MaxAttempts: t.MaxAttempts, Reversible: t.Reversible,
			Approvals: deref(t.Approvals), Verdict: verdict, Deny: deny, Notify: t.Notify,
			Tiers: t.reviewTiers(), Grants: t.reviewGrants(), RejectReason: approvals.ReasonRule(t.RejectReason),
			Description: t.Description, EffectSchema: c.effectSchemas[name],
			RemindAfter: t.RemindAfter, EscalateAfter: t.EscalateAfter, EscalateTo: canonical(t.EscalateTo),
			EscalateAddsApprovers: t.EscalateAddsApprovers,
			Execute:               t.Execute, OutcomeTimeout: t.OutcomeTimeout,
			Surfaces: c.ToolSurfaces(t),
			Preview:  c.previewEndpoint(t), BusinessID: t.BusinessID,
		}
		tool.Version = tool.PolicyVersion() // once, not per intent
		tools[name] = tool
	}
	return tools
}

// AgentOwners returns each agent's owners, by agent name.
func (c *Config) AgentOwners() map[string][]string {
	owners := make(map[string][]string, len(c.File.Agents))
	for _, a := range c.File.Agents {
		if len(a.Owners) > 0 {
			owners[a.Name] = canonical(a.Owners)
		}
	}
	return owners
}

// NudgesConfigured reports whether any tool has a reminder or an
// escalation, so the sweep that queues them has something to do.
func (c *Config) NudgesConfigured() bool {
	for _, t := range c.File.Tools {
		if t.RemindAfter > 0 || t.EscalateAfter > 0 {
			return true
		}
	}
	return false
}

// AgentList returns the configured agents; Validate has checked them.
func (c *Config) AgentList() hook.Agents {
	var agents hook.Agents
	for _, a := range c.File.Agents {
		if agent, err := hook.ParseAgent(a.Name, a.TokenSHA256...); err == nil {
			agent.Callback = a.Callback != nil
			agent.Admin = a.Admin
			agents = append(agents, agent)
		}
	}
	return agents
}
