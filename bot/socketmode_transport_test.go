package bot_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/countersign/countersign/bot/bottest"
)

// Over a real Socket Mode connection (apps.connections.open, then a
// WebSocket) clicks are decided and acknowledged and slash commands are
// answered in the acknowledgement.
func TestSocketModeConnection(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{})
	client := slack.New("xoxb-test", slack.OptionAPIURL(b.fake.URL()+"/"), slack.OptionAppLevelToken("xapp-test"),
		slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.bot.RunSocketMode(ctx, socketmode.New(client)) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	b.fake.SendSocket(map[string]any{
		"envelope_id": "env-click", "type": "interactive", "accepts_response_payload": false,
		"payload": json.RawMessage(bottest.ClickPayload("UANA", billingChan, "approve", decisionValue(req))),
	})
	b.fake.SendSocket(map[string]any{
		"envelope_id": "env-cmd", "type": "slash_commands", "accepts_response_payload": true,
		"payload": map[string]any{"command": "/countersign", "text": req.Key[:12], "user_id": "USUP", "channel_id": billingChan},
	})
	var cmdAck map[string]any
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, clicked := b.fake.SocketAck("env-click")
		ack, answered := b.fake.SocketAck("env-cmd")
		if clicked && answered {
			cmdAck = ack
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no acknowledgement over the socket")
		}
		<-tick.C
	}
	if got := b.count(`SELECT count(*) FROM decisions WHERE request_id = $1`, req.ID); got != 1 {
		t.Fatalf("%d decisions over the socket, want 1", got)
	}
	payload, _ := json.Marshal(cmdAck["payload"])
	if !strings.Contains(string(payload), req.Key) || !strings.Contains(string(payload), "ephemeral") {
		t.Fatalf("slash command ack = %s", payload)
	}
}
