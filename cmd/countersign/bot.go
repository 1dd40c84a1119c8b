package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/surface/previewhttp"
)

// slackClient is the Slack API client, with its own HTTP timeouts and the
// API base from COUNTERSIGN_SLACK_API_URL; nil without SLACK_BOT_TOKEN.
func (a *app) slackClient() *slack.Client {
	if a.cfg.SlackBotToken == "" {
		return nil
	}
	httpClient := &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 10 * time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   16,
		},
	}
	opts := []slack.Option{slack.OptionHTTPClient(httpClient)}
	if a.cfg.SlackAPIURL != "" {
		opts = append(opts, slack.OptionAPIURL(strings.TrimSuffix(a.cfg.SlackAPIURL, "/")+"/"))
	}
	if a.cfg.SlackAppToken != "" {
		opts = append(opts, slack.OptionAppLevelToken(a.cfg.SlackAppToken))
	}
	return slack.New(a.cfg.SlackBotToken, opts...)
}

// newGroups resolves approvers listed as Slack user groups.
func newGroups(client *slack.Client) approvals.GroupResolver {
	return bot.NewGroups(client, bot.DefaultGroupTTL)
}

// addBot builds the Slack surface: the signed routes, the outbox worker,
// Socket Mode when SLACK_APP_TOKEN is set, and the card-convergence sweep.
// Without a client (no SLACK_BOT_TOKEN) it adds nothing: outbox rows wait.
func (a *app) addBot(client *slack.Client, groups approvals.GroupResolver, ex *executor.Executor) error {
	if client == nil {
		return nil
	}
	logger := a.logger.With("component", "bot")
	cfg := bot.Config{
		Slack:          client,
		Review:         a.review,
		Cards:          a.db,
		Lookup:         lookup.Service{DB: a.db},
		Groups:         groups,
		Resolver:       ex,
		SigningSecrets: a.cfg.SlackSigningSecrets(),
		DefaultChannel: a.cfg.File.Slack.Channel,
		LookupAllowed:  a.cfg.File.Slack.LookupAllowed,
		Admins:         a.cfg.File.Slack.Admins,
		Logger:         logger,
		Metrics:        bot.NewMetrics(a.registry),
		Previews:       previewhttp.New(),
		Surfaces:       a.surfaces,
	}
	if a.cfg.SlackAppToken != "" {
		cfg.Socket = socketmode.New(client)
	}
	b := bot.New(cfg)
	if len(a.cfg.File.Slack.LookupAllowed) == 0 {
		logger.Warn("slack.lookup_allowed is not set: every member of the workspace can read request details with the slash command")
	}
	if a.cfg.SlackSigningSecret != "" {
		a.mux.Handle("POST "+bot.InteractionsPath, b.Interactions())
		a.mux.Handle("POST "+bot.CommandsPath, b.Commands())
	}
	if err := a.sched.addLeaderSweep("card convergence", a.cfg.File.Executor.CardSchedule, func(ctx context.Context) error {
		_, err := b.ConvergeOnce(ctx)
		return err
	}); err != nil {
		return err
	}
	// Socket Mode and the outbox loop end with the signal; Stop waits, within
	// the executor's grace, for the answers still in flight.
	a.add("bot", b, ex.ShutdownGrace())
	return nil
}
