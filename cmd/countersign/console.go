package main

import (
	"log/slog"
	"strings"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/previewhttp"
)

// consoleGroups resolves oidc:group:<name> approvers (from the console's
// groups and the reviewer's ID token) and hands every other group to next,
// Slack's resolver or nil. With neither a console nor Slack nothing
// resolves groups, as before; with Slack alone an oidc group has no
// members rather than going to Slack's API.
func consoleGroups(cfg *config.Config, next approvals.GroupResolver) approvals.GroupResolver {
	if !cfg.File.Console.Enabled() && next == nil {
		return nil
	}
	return console.Groups{Members: cfg.File.Console.Groups, Next: next}
}

// mountConsole serves the review console under /console/ when the file
// configures it (docs/CONSOLE.md).
func (a *app) mountConsole() {
	c := a.cfg.File.Console
	if !c.Enabled() {
		return
	}
	logger := a.logger.With("component", "console")
	secrets := a.cfg.DispatchSecrets()
	if len(secrets) == 0 {
		logger.Warn("COUNTERSIGN_DISPATCH_SECRET is not set: console sessions are signed with a random key, so they end when serve restarts and work on this replica only")
	}
	a.mux.Handle(console.Prefix+"/", console.New(console.Options{
		Service: a.review, Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		RedirectURL: c.RedirectURL, GroupsClaim: c.GroupsClaim, SessionTTL: c.TTL(),
		Secrets: secrets, Logger: logger,
		Previews: surface.NewPreviewer(a.db, a.review, previewhttp.New(), logger),
	}))
	logger.Info("review console: reviewers sign in with the identity provider", slog.String("issuer", c.Issuer),
		slog.String("url", strings.TrimSuffix(c.RedirectURL, "callback")))
}
