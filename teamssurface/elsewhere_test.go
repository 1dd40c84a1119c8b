package teamssurface_test

import (
	"net/http"
	"strings"
	"testing"
)

// A click in Teams for a request whose tool's surfaces leave Teams out
// (its data made up from another card's) decides nothing, and the answer
// shows no card of it.
func TestAClickOnAToolNotInTeamsDecidesNothing(t *testing.T) {
	b := setup(t)
	b.submit()
	elsewhere := b.submitOn("notes.add") // Slack only
	b.drain()
	activity, actions := b.posted()
	data := map[string]any{}
	for k, v := range actions["approve"] {
		data[k] = v
	}
	data["request_id"], data["payload_hash"] = elsewhere.ID, elsewhere.PayloadHash
	status, out := send(t, b.url, b.conn.token(tokenOpts{}), b.conn.invoke(ana, activity, data))
	if status != http.StatusOK || out["type"] == "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("answered %d %v, want a message", status, out)
	}
	if msg, _ := out["value"].(string); !strings.Contains(msg, "not reviewed in Teams") {
		t.Fatalf("the answer %v does not say the tool is not reviewed in Teams", out)
	}
	b.undecided(elsewhere, "a Teams click on a Slack-only tool")
}
