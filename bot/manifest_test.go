package bot_test

import (
	"bytes"
	"net/url"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/slack-go/slack"
	"gopkg.in/yaml.v3"

	"github.com/countersign/countersign/bot"
)

// manifest.yml is an installable manifest whose URLs and scopes match what
// the code serves and calls.
func TestManifestMatchesTheCode(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../manifest.yml")
	if err != nil {
		t.Fatal(err)
	}
	var m slack.Manifest
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("manifest.yml does not parse as slack.Manifest: %v", err)
	}
	if m.Display.Name == "" || m.Features.BotUser.DisplayName == "" || m.Metadata.MajorVersion != 1 {
		t.Fatal("the manifest lacks a name, a bot user or its version")
	}
	if m.Settings.Interactivity == nil || !m.Settings.Interactivity.IsEnabled || path(t, m.Settings.Interactivity.RequestUrl) != bot.InteractionsPath {
		t.Fatalf("interactivity = %+v, want enabled at %s", m.Settings.Interactivity, bot.InteractionsPath)
	}
	if len(m.Features.SlashCommands) != 1 {
		t.Fatalf("slash commands = %+v", m.Features.SlashCommands)
	}
	cmd := m.Features.SlashCommands[0]
	if cmd.Command != bot.SlashCommand || path(t, cmd.Url) != bot.CommandsPath || cmd.ShouldEscape {
		t.Fatalf("slash command = %+v", cmd)
	}
	if m.Settings.SocketModeEnabled {
		t.Error("the manifest enables Socket Mode by default; the URLs would be ignored")
	}

	want := []string{"commands"}
	for _, scopes := range bot.MethodScopes {
		for _, s := range scopes {
			if !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
	}
	got := slices.Clone(m.OAuthConfig.Scopes.Bot)
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("bot scopes = %v, want %v", got, want)
	}
}

// Every Slack method the tests saw the bot call has its scope declared.
func TestCalledMethodsHaveScopes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.fake.SetGroup("S0FINANCE", "UCAT")
	b.fake.FailNext("chat.postMessage", bottestLanded())
	req := b.submit(intent{})
	b.deliver()
	b.click("UCAT", billingChan, "approve", decisionValue(req))
	b.deliver()
	b.bot.Wait()
	for _, c := range b.fake.Calls("") {
		if _, ok := bot.MethodScopes[c.Method]; !ok {
			t.Errorf("the bot called %s, which has no declared scope", c.Method)
		}
	}
}

func path(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" {
		t.Fatalf("%q is not an https URL", raw)
	}
	return u.Path
}
