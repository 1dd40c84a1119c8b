package main

import (
	"log/slog"
	"reflect"
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
// The console's hand-kept groups follow a reload (reloadConsole).
func consoleGroups(cfg *config.Config, next approvals.GroupResolver) *console.Groups {
	if !cfg.File.Console.Enabled() && next == nil {
		return nil
	}
	return &console.Groups{Members: cfg.File.Console.Groups, Next: next}
}

// reloadConsole takes the reloaded console.groups; the console's client,
// issuer and session settings stay as serve started until a restart.
func (a *app) reloadConsole(loaded *config.Config, log *slog.Logger) {
	if a.consoleGroups != nil {
		a.consoleGroups.SetMembers(loaded.File.Console.Groups)
	}
	was, now := a.cfg.File.Console, loaded.File.Console
	was.Groups, now.Groups = nil, nil
	if !reflect.DeepEqual(was, now) {
		log.Warn("the console's issuer, client, redirect URL, groups claim and session TTL take effect at the next restart; its groups are reloaded")
	}
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
