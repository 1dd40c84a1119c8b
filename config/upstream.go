package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/sender"
)

// UpstreamConfig is an MCP server whose tools countersign gates: it
// connects to it as a client, re-exposes its tools as <upstream>__<tool>,
// passes its reads straight through and turns every other call into an
// intent reviewed with the settings a tool has (approvers, approvals,
// tiers, deny, channel, ...), then makes the approved call once.
type UpstreamConfig struct {
	// Command runs the server over stdio; URL reaches it over streamable
	// HTTP. Exactly one is set.
	Command []string `yaml:"command"`
	URL     string   `yaml:"url"`
	// Headers go with every HTTP request to URL (they may be ${VAR});
	// Env is added to Command's environment. Both are secrets: never
	// logged, redacted by config check.
	Headers map[string]string `yaml:"headers"`
	Env     map[string]string `yaml:"env"`
	// Trusted believes the upstream's readOnlyHint and idempotentHint.
	Trusted bool `yaml:"trusted"`
	// Reads are tools that pass straight through, never stored.
	Reads []string `yaml:"reads"`
	// Idempotent are tools whose call may be made again after a lost
	// connection; any other such call needs review.
	Idempotent []string `yaml:"idempotent"`
	// CallTimeout bounds one tools/call on the upstream (default 60s).
	CallTimeout time.Duration `yaml:"call_timeout"`
	// Hold is how long a caller's tools/call of a gated tool waits for the
	// outcome before it answers with the pending request (default 30s).
	Hold time.Duration `yaml:"hold"`
	// Review is how its calls are reviewed, as a tool's are.
	Review ToolConfig `yaml:",inline"`
}

// Defaults of an upstream.
const (
	DefaultUpstreamCallTimeout = 60 * time.Second
	DefaultUpstreamHold        = 30 * time.Second
)

// upstreamName is an upstream's name: it prefixes its tools' names before
// "__", so it holds no "__" of its own.
var upstreamName = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]|_[a-z0-9-])*$`)

// maxUpstreamName leaves room for a tool's name within MCP's 64
// characters.
const maxUpstreamName = 24

// upstreamWithDefaults is u with its own defaults, and its review's as a
// tool's (withToolDefaults): a claim outlasts a call by a minute.
func upstreamWithDefaults(u UpstreamConfig, slackChannel string) UpstreamConfig {
	if u.CallTimeout == 0 {
		u.CallTimeout = DefaultUpstreamCallTimeout
	}
	if u.Hold == 0 {
		u.Hold = DefaultUpstreamHold
	}
	u.Review.Dispatch.Timeout = u.CallTimeout
	if u.Review.ClaimTimeout == 0 {
		u.Review.ClaimTimeout = max(defaultClaimTimeout, u.CallTimeout+time.Minute)
	}
	u.Review = withToolDefaults(u.Review, slackChannel)
	return u
}

// validateUpstreams reports every problem with the upstreams: a bad name,
// not exactly one of command and url, a setting of countersign's dispatch,
// and the review settings' own problems as a tool's.
func (c *Config) validateUpstreams() []error {
	var errs []error
	names := make([]string, 0, len(c.File.Upstreams))
	for name := range c.File.Upstreams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		u := c.File.Upstreams[name]
		add := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("upstreams.%s: "+format, append([]any{name}, args...)...))
		}
		if !upstreamName.MatchString(name) || len(name) > maxUpstreamName {
			add("the name must be 1 to %d lowercase letters, digits, - and single _ (it prefixes its tools' names before __)", maxUpstreamName)
		}
		if _, clash := c.File.Tools[name]; clash {
			add("a tool has the same name")
		}
		switch {
		case len(u.Command) > 0 && u.URL != "":
			add("set command or url, not both")
		case len(u.Command) == 0 && u.URL == "":
			add("set command (a program and its arguments, run over stdio) or url (streamable HTTP)")
		case u.URL != "" && !validHTTPURL(u.URL):
			add("url must be an http or https URL")
		case len(u.Command) > 0 && u.Command[0] == "":
			add("command's program is empty")
		}
		if len(u.Headers) > 0 && u.URL == "" {
			add("headers go with url; a command takes env")
		}
		if u.CallTimeout < 0 || u.Hold < 0 {
			add("call_timeout and hold must be positive")
		}
		r := u.Review
		if r.Dispatch.URL != "" || len(r.Dispatch.Headers) > 0 || len(r.Dispatch.Secret) > 0 ||
			r.Execute != "" || r.Verify != nil || r.Precondition != nil || r.KeyAware || r.VerifyAfter != 0 ||
			r.OutcomeTimeout != 0 || r.EffectSchema != nil {
			add("dispatch, execute, verify, precondition, key_aware, verify_after, outcome_timeout and effect_schema are not an upstream's: countersign calls its tools, and their input schemas are the effects'")
		}
		// The review settings are checked as a tool's, under the
		// upstream's name.
		review := upstreamWithDefaults(u, c.File.Slack.Channel).Review
		review.Dispatch.URL, review.Dispatch.Method = "http://upstream.invalid", "POST"
		if err := review.Validate(name, c.SlackBotToken != ""); err != nil {
			errs = append(errs, errors.New(strings.ReplaceAll(err.Error(), "tools."+name, "upstreams."+name)))
		}
	}
	return errs
}

// UpstreamTool is a tool an upstream lists, as serve hands it to the
// configuration to be reviewed and executed like a configured tool.
type UpstreamTool struct {
	Upstream    string
	Exposed     string // <upstream>__<tool>
	Description string
	InputSchema json.RawMessage
	// Read tools pass straight through and are not tools here.
	Read bool
	// Idempotent tools may be called again when a call's outcome is
	// unknown; any other such call needs review.
	Idempotent bool
}

// UpstreamReviewTools returns the review tools of the upstreams' gated
// tools: each reviewed with its upstream's settings, its effect (the
// call's arguments) held to its input schema. An input schema that does
// not compile holds the effect to nothing and is logged by the caller.
func (c *Config) UpstreamReviewTools(list []UpstreamTool) (map[string]approvals.Tool, []error) {
	tools := make(map[string]approvals.Tool, len(list))
	var errs []error
	for _, ut := range list {
		u, ok := c.File.Upstreams[ut.Upstream]
		if !ok || ut.Read {
			continue
		}
		t := u.Review
		verdict, deny := verdictOf(t.Approvals, t.Deny)
		tool := approvals.Tool{
			Name: ut.Exposed, Channel: t.Channel, Approvers: canonical(t.Approvers),
			RequestTTL: t.RequestTTL, MaxAttempts: t.MaxAttempts, Reversible: t.Reversible,
			Approvals: deref(t.Approvals), Verdict: verdict, Deny: deny, Notify: t.Notify,
			Tiers: t.reviewTiers(), Grants: t.reviewGrants(), RejectReason: approvals.ReasonRule(t.RejectReason),
			Description: ut.Description, Upstream: ut.Upstream, Surfaces: c.ToolSurfaces(t),
			RemindAfter: t.RemindAfter, EscalateAfter: t.EscalateAfter, EscalateTo: canonical(t.EscalateTo),
			EscalateAddsApprovers: t.EscalateAddsApprovers,
			Preview:               c.previewEndpoint(t), BusinessID: t.BusinessID,
		}
		if len(ut.InputSchema) > 0 {
			schema, err := approvals.CompileEffectSchema(ut.Exposed, ut.InputSchema, "")
			if err != nil {
				errs = append(errs, fmt.Errorf("upstreams.%s: the input schema of %s does not compile, so its arguments are not checked: %w", ut.Upstream, ut.Exposed, err))
			} else {
				tool.EffectSchema = schema
			}
		}
		tool.Version = tool.PolicyVersion()
		tools[ut.Exposed] = tool
	}
	return tools, errs
}

// UpstreamExecutorTools returns the executor's tools of the upstreams'
// gated tools: sent by send (the gateway's MCP sender), re-checked against
// their review policy as configured tools are.
func (c *Config) UpstreamExecutorTools(list []UpstreamTool, send sender.Sender) map[string]executor.Tool {
	review, _ := c.UpstreamReviewTools(list)
	tools := make(map[string]executor.Tool, len(review))
	for _, ut := range list {
		if _, gated := review[ut.Exposed]; !gated {
			continue
		}
		name, u := ut.Exposed, c.File.Upstreams[ut.Upstream]
		// An idempotent tool is sent again when an outcome is unknown, as a
		// provider that honours Idempotency-Key is; any other such call
		// needs review, for it cannot be asked whether the call was made.
		et := executor.Tool{
			Name: name, Sender: send, KeyAware: ut.Idempotent, Timeout: u.CallTimeout, MaxAttempts: u.Review.MaxAttempts,
			ClaimTimeout: u.Review.ClaimTimeout, ApprovalTTL: u.Review.ApprovalTTL,
			RequestTTL: u.Review.RequestTTL,
		}
		tools[name] = WithPolicy(et, review[name])
	}
	return tools
}

// UpstreamHold is how long a caller's tools/call of upstream's gated tool
// waits for its outcome.
func (c *Config) UpstreamHold(upstream string) time.Duration {
	if u, ok := c.File.Upstreams[upstream]; ok && u.Hold > 0 {
		return u.Hold
	}
	return DefaultUpstreamHold
}
