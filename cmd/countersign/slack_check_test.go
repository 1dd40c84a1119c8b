package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store/storetest"
)

// slackCheckEnv is serve's environment with Slack at the fake and a
// configuration with a slack block.
func slackCheckEnv(t *testing.T, fake *bottest.Slack, extra map[string]string) map[string]string {
	t.Helper()
	sum := sha256.Sum256([]byte(smokeToken))
	env := map[string]string{
		"COUNTERSIGN_DATABASE_URL": storetest.NewURL(t),
		"COUNTERSIGN_CONFIG": writeConfig(t, fmt.Sprintf(`
slack: {channel: C0BILLING}
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:]))),
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT":      "json",
		"SLACK_BOT_TOKEN":             "xoxb-test",
		"SLACK_SIGNING_SECRET":        "s3cret",
	}
	if fake != nil {
		env["COUNTERSIGN_SLACK_API_URL"] = fake.URL() + "/"
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// At start serve asks Slack whose the bot token is and logs the team and
// the bot; a token Slack refuses fails start with a line that says what to
// fix, before anything is served.
func TestStartChecksTheSlackToken(t *testing.T) {
	t.Parallel()
	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		fake := bottest.New(t)
		_, logs := startServeWith(t, envFrom(slackCheckEnv(t, fake, nil)))
		if !strings.Contains(logs.String(), `"msg":"slack: the bot token works"`) || !strings.Contains(logs.String(), `"bot_user_id":"UBOT"`) {
			t.Errorf("no line naming the bot: %s", logs.String())
		}
		if fake.Count("auth.test") != 1 {
			t.Errorf("auth.test called %d times, want once", fake.Count("auth.test"))
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		fake := bottest.New(t)
		fake.FailNext("auth.test", bottest.Failure{SlackError: "invalid_auth"})
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"serve"}, envFrom(slackCheckEnv(t, fake, nil)), nil, io.Discard, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), "slack refused SLACK_BOT_TOKEN at auth.test (invalid_auth: the token is not valid)") {
			t.Errorf("serve exited %d with %q, want a failed start naming the token", code, stderr.String())
		}
		if strings.Contains(stderr.String(), `"msg":"listening"`) {
			t.Error("serve listened with a refused token")
		}
	})
	t.Run("refused but told to warn", func(t *testing.T) {
		t.Parallel()
		fake := bottest.New(t)
		fake.FailNext("auth.test", bottest.Failure{SlackError: "token_revoked"})
		_, logs := startServeWith(t, envFrom(slackCheckEnv(t, fake, map[string]string{"COUNTERSIGN_SLACK_CHECK": "warn"})))
		if !strings.Contains(logs.String(), "token_revoked: the token was revoked") {
			t.Errorf("the refusal was not logged: %s", logs.String())
		}
	})
	t.Run("out of reach", func(t *testing.T) {
		t.Parallel()
		_, logs := startServeWith(t, envFrom(slackCheckEnv(t, nil, map[string]string{"COUNTERSIGN_SLACK_API_URL": "http://127.0.0.1:9/api/"})))
		if !strings.Contains(logs.String(), "slack: auth.test failed; starting anyway") {
			t.Errorf("Slack out of reach at start was not logged: %s", logs.String())
		}
	})
}

// A configuration with a slack block and no SLACK_BOT_TOKEN says Slack is off.
func TestASlackBlockWithoutATokenSaysSlackIsOff(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cfg := &config.Config{}
	cfg.File.Slack.Channel = "C0BILLING"
	logSlackOff(cfg, slog.New(slog.NewTextHandler(&out, nil)))
	if !strings.Contains(out.String(), "slack is off: the configuration has a slack block but SLACK_BOT_TOKEN is not set") {
		t.Errorf("logged %q", out.String())
	}
	out.Reset()
	logSlackOff(&config.Config{}, slog.New(slog.NewTextHandler(&out, nil)))
	if !strings.Contains(out.String(), "slack is off (SLACK_BOT_TOKEN is not set)") {
		t.Errorf("logged %q", out.String())
	}
}

func TestSlackCheckSettingIsValidated(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(envFrom(slackCheckEnv(t, nil, map[string]string{"COUNTERSIGN_SLACK_CHECK": "sometimes"})))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `COUNTERSIGN_SLACK_CHECK is "sometimes"`) {
		t.Errorf("Validate = %v", err)
	}
}
