package bot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// acker is the part of a Socket Mode client that answers an envelope.
type acker interface {
	Ack(req socketmode.Request, payload ...any) error
}

// RunSocketMode serves interactions and slash commands over Slack's Socket
// Mode until ctx ends, for teams without a public URL. Slack has
// authenticated the connection (the app-level token), so envelopes carry no
// signature. The handlers are the ones behind the HTTP routes.
func (b *Bot) RunSocketMode(ctx context.Context, client *socketmode.Client) error {
	errc := make(chan error, 1)
	go func() { errc <- client.RunContext(ctx) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case evt, ok := <-client.Events:
			if !ok {
				return errors.New("socket mode events closed")
			}
			b.socketEvent(ctx, client, evt)
		}
	}
}

// socketEvent handles one Socket Mode event; interactions are decided before
// the envelope is acknowledged, as over HTTP.
func (b *Bot) socketEvent(ctx context.Context, client acker, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnected:
		b.logger.Info("socket mode connected")
	case socketmode.EventTypeConnectionError:
		attrs := []any{slog.String("event", string(evt.Type))}
		if ce, ok := evt.Data.(*slack.ConnectionErrorEvent); ok && ce.ErrorObj != nil {
			attrs = append(attrs, slog.String("error", ce.ErrorObj.Error()), slog.Int("attempt", ce.Attempt), slog.Duration("retry_in", ce.Backoff))
		}
		b.logger.Warn("socket mode connection problem", attrs...)
	case socketmode.EventTypeInvalidAuth:
		b.logger.Error("socket mode: Slack refused SLACK_APP_TOKEN (invalid_auth); it must be the app-level token (xapp-…) with the connections:write scope",
			slog.String("event", string(evt.Type)))
	case socketmode.EventTypeInteractive:
		if evt.Request == nil {
			return
		}
		actx, cancel := context.WithTimeout(ctx, ackBudget)
		response := b.interact(actx, evt.Request.Payload)
		cancel()
		var payload []any
		if response != nil {
			payload = append(payload, json.RawMessage(response))
		}
		if err := client.Ack(*evt.Request, payload...); err != nil {
			b.logger.Warn("socket mode ack", slog.String("error", err.Error()))
		}
	case socketmode.EventTypeSlashCommand:
		if evt.Request == nil {
			return
		}
		cmd, ok := evt.Data.(slack.SlashCommand)
		if !ok {
			_ = client.Ack(*evt.Request)
			return
		}
		cctx, cancel := context.WithTimeout(ctx, ackBudget)
		answer := b.command(cctx, cmd)
		cancel()
		if err := client.Ack(*evt.Request, answer); err != nil {
			b.logger.Warn("socket mode ack", slog.String("error", err.Error()))
		}
	case socketmode.EventTypeEventsAPI:
		if evt.Request != nil {
			_ = client.Ack(*evt.Request) // countersign subscribes to no events; never leave Slack retrying
		}
	}
}
