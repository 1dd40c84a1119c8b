package config

import (
	"fmt"
	"net/url"
	"regexp"
	"time"

	"github.com/countersign/countersign/approvals"
)

// PreviewConfig is a tool's (or an upstream's) preview endpoint: before a
// request's first card is posted, countersign POSTs its tool, key and
// effect there, signed as a dispatch, and shows what it answers the write
// changes (docs/CONSOLE.md, "What changes").
type PreviewConfig struct {
	URL string `yaml:"url"`
	// Timeout bounds the answer, and so how long a card may wait for it
	// (default 2s, at most 10s).
	Timeout time.Duration `yaml:"timeout"`
}

// businessIDField is a business_id: one top-level field of the effect.
var businessIDField = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,99}$`)

// validatePreview reports every problem with a tool's preview and
// business_id, as add words them.
func (t ToolConfig) validatePreview(add func(format string, args ...any)) {
	if t.BusinessID != "" && !businessIDField.MatchString(t.BusinessID) {
		add("business_id %q must name one top-level field of the effect (letters, digits, _ . -; at most 100)", t.BusinessID)
	}
	p := t.Preview
	if p == nil {
		return
	}
	u, err := url.Parse(p.URL)
	switch {
	case p.URL == "":
		add("preview.url is empty: give the URL countersign asks what a write changes, or leave preview out")
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		add("preview.url must be an https URL (or http to a loopback address)")
	case u.Scheme == "http" && !loopbackHost(u.Hostname()):
		add("preview.url must be https: a preview carries the effect, and http is only for a loopback address (127.0.0.1, ::1, localhost)")
	case u.User != nil:
		add("preview.url must not hold a user or password: the request is signed with the dispatch secret")
	}
	if p.Timeout < 0 || p.Timeout > approvals.MaxPreviewTimeout {
		add("preview.timeout (%s) must be between 0 (the default, %s) and %s: a card waits for the preview at most that long",
			p.Timeout, approvals.DefaultPreviewTimeout, approvals.MaxPreviewTimeout)
	}
}

// previewEndpoint is a tool's preview as review takes it, signed with the
// tool's dispatch secrets, else COUNTERSIGN_DISPATCH_SECRET's; nil without
// one.
func (c *Config) previewEndpoint(t ToolConfig) *approvals.PreviewEndpoint {
	if t.Preview == nil || t.Preview.URL == "" {
		return nil
	}
	p := &approvals.PreviewEndpoint{URL: t.Preview.URL, Timeout: t.Preview.Timeout, Secrets: c.DispatchSecrets()}
	if p.Timeout == 0 {
		p.Timeout = approvals.DefaultPreviewTimeout
	}
	if len(t.Dispatch.Secret) > 0 {
		p.Secrets = t.Dispatch.Secret.bytes()
	}
	return p
}

// validatePreviewSecrets reports every preview with nothing to sign it:
// a preview is signed as a dispatch, so a provider can tell it came from
// countersign.
func (c *Config) validatePreviewSecrets() []error {
	var errs []error
	check := func(where string, t ToolConfig) {
		if p := c.previewEndpoint(t); p != nil && len(p.Secrets) == 0 {
			errs = append(errs, fmt.Errorf("%s: preview is signed as a dispatch is: set COUNTERSIGN_DISPATCH_SECRET or the tool's dispatch.secret", where))
		}
	}
	for name, t := range c.File.Tools {
		check("tools."+name, t)
	}
	for name, u := range c.File.Upstreams {
		check("upstreams."+name, u.Review)
	}
	return errs
}
