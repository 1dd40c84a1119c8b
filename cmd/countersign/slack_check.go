package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/config"
)

// slackCheckTimeout bounds the auth.test call at start.
const slackCheckTimeout = 10 * time.Second

// slackAuthErrors are auth.test's answers that mean the token itself is
// wrong: waiting will not fix them.
var slackAuthErrors = map[string]string{
	"invalid_auth":           "the token is not valid",
	"not_authed":             "no token was sent",
	"token_revoked":          "the token was revoked",
	"token_expired":          "the token expired",
	"account_inactive":       "the app's bot user or workspace is inactive",
	"not_allowed_token_type": "it is not a bot token",
}

// checkSlack asks Slack who the bot token belongs to and logs the answer,
// so a wrong token shows at start rather than as endless delivery retries.
// A token Slack refuses fails start unless COUNTERSIGN_SLACK_CHECK=warn;
// Slack out of reach is logged and start goes on, since the outbox retries.
func checkSlack(ctx context.Context, client *slack.Client, mode string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, slackCheckTimeout)
	defer cancel()
	who, err := client.AuthTestContext(ctx)
	if err == nil {
		logger.Info("slack: the bot token works", slog.String("team", who.Team), slog.String("team_id", who.TeamID),
			slog.String("bot_user", who.User), slog.String("bot_user_id", who.UserID), slog.String("url", who.URL))
		return nil
	}
	var refused slack.SlackErrorResponse
	why, isAuth := "", false
	if errors.As(err, &refused) {
		why, isAuth = slackAuthErrors[refused.Err]
	} else if msg := err.Error(); slackAuthErrors[msg] != "" {
		why, isAuth = slackAuthErrors[msg], true
	}
	if !isAuth {
		logger.Warn("slack: auth.test failed; starting anyway, cards wait in the outbox until Slack answers",
			slog.String("error", err.Error()))
		return nil
	}
	problem := fmt.Errorf("slack refused SLACK_BOT_TOKEN at auth.test (%v: %s); use the Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page, or set COUNTERSIGN_SLACK_CHECK=warn to start anyway", err, why)
	if mode == config.SlackCheckWarn {
		logger.Error(problem.Error())
		return nil
	}
	return problem
}

// logSlackOff says that Slack is off when there is no bot token, loudly when
// the configuration file has a slack block (someone meant to use it).
func logSlackOff(cfg *config.Config, logger *slog.Logger) {
	if cfg.SlackBotToken != "" {
		return
	}
	if cfg.File.Slack.Channel != "" || len(cfg.File.Slack.LookupAllowed) > 0 {
		logger.Warn("slack is off: the configuration has a slack block but SLACK_BOT_TOKEN is not set, so no card is posted and no click is heard")
		return
	}
	logger.Info("slack is off (SLACK_BOT_TOKEN is not set)")
}
