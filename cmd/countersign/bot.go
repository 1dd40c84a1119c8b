package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/countersign/countersign/bot"
)

// deliverSchedule is how often the outbox worker looks for due deliveries.
const deliverSchedule = "@every 1s"

// maxDeliverRounds bounds the batches one tick delivers, so a backlog drains
// without one tick running for ever.
const maxDeliverRounds = 20

// startBot builds the Slack surface: the client (its own HTTP timeouts; the
// API base from COUNTERSIGN_SLACK_API_URL), user-group resolution for
// approvals, the signed routes, the outbox worker and the convergence sweep
// on cron, and Socket Mode when SLACK_APP_TOKEN is set. Without
// SLACK_BOT_TOKEN it does nothing: outbox rows wait.
func (a *app) startBot(ctx context.Context) error {
	if a.cfg.SlackBotToken == "" {
		return nil
	}
	logger := a.logger.With("component", "bot")
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
	client := slack.New(a.cfg.SlackBotToken, opts...)
	a.review.Groups = bot.NewGroups(client, bot.DefaultGroupTTL)

	b := bot.New(bot.Config{
		Slack:          client,
		DB:             a.db,
		Review:         a.review,
		Resolver:       a.executor,
		SigningSecret:  a.cfg.SlackSigningSecret,
		DefaultChannel: a.cfg.File.Slack.Channel,
		LookupAllowed:  a.cfg.File.Slack.LookupAllowed,
		Logger:         logger,
		Metrics:        bot.NewMetrics(a.registry),
	})
	if len(a.cfg.File.Slack.LookupAllowed) == 0 {
		logger.Warn("slack.lookup_allowed is not set: every member of the workspace can read request details with the slash command")
	}
	if a.cfg.SlackSigningSecret != "" {
		a.mux.Handle("POST "+bot.InteractionsPath, b.Interactions())
		a.mux.Handle("POST "+bot.CommandsPath, b.Commands())
	}

	if _, err := a.cron.AddFunc(deliverSchedule, func() {
		for range maxDeliverRounds {
			n, err := b.DeliverOnce(ctx)
			if err != nil {
				logger.Error("outbox delivery failed", slog.String("error", err.Error()))
				return
			}
			if n < bot.DefaultBatch {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("scheduling outbox delivery: %w", err)
	}
	if _, err := a.cron.AddFunc(a.cfg.File.Executor.CardSchedule, func() {
		if _, err := b.ConvergeOnce(ctx); err != nil {
			logger.Error("card convergence sweep failed", slog.String("error", err.Error()))
		}
	}); err != nil {
		return fmt.Errorf("scheduling card convergence: %w", err)
	}

	a.bot = b
	if a.cfg.SlackAppToken != "" {
		sm := socketmode.New(client)
		a.socketDone = make(chan struct{})
		go func() {
			defer close(a.socketDone)
			if err := b.RunSocketMode(ctx, sm); err != nil {
				logger.Error("socket mode stopped", slog.String("error", err.Error()))
			}
		}()
		logger.Info("socket mode on")
	}
	return nil
}

// stopBot waits, until ctx ends, for Socket Mode to stop (it ends with the
// signal's context) and for the ephemeral answers still in flight.
func (a *app) stopBot(ctx context.Context) {
	if a.bot == nil {
		return
	}
	answered := make(chan struct{})
	go func() {
		if a.socketDone != nil {
			<-a.socketDone
		}
		a.bot.Wait()
		close(answered)
	}()
	select {
	case <-answered:
	case <-ctx.Done():
		a.logger.Warn("slack answers still in flight at shutdown")
	}
}
