package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store/storetest"
)

// teamsReplies is a local Bot Connector that counts the thread replies of
// each card it was asked to post (its tokens are never checked here: no
// click comes in).
type teamsReplies struct {
	server  *httptest.Server
	mu      sync.Mutex
	cards   int
	replies map[string][]string // activity id → reply texts
}

func newTeamsReplies(t *testing.T) *teamsReplies {
	t.Helper()
	c := &teamsReplies{replies: map[string][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "bot-token", "expires_in": 3600})
	})
	mux.HandleFunc("POST /v3/conversations/{conv}/activities", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.cards++
		id := fmt.Sprintf("act-%d", c.cards)
		c.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id})
	})
	mux.HandleFunc("PUT /v3/conversations/{conv}/activities/{id}", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"id": r.PathValue("id")})
	})
	mux.HandleFunc("POST /v3/conversations/{conv}/activities/{id}", func(w http.ResponseWriter, r *http.Request) {
		var act struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&act)
		c.mu.Lock()
		c.replies[r.PathValue("id")] = append(c.replies[r.PathValue("id")], act.Text)
		c.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "reply"})
	})
	c.server = httptest.NewServer(mux)
	t.Cleanup(c.server.Close)
	return c
}

// nudges counts, per card, the reminders and escalations replied.
func (c *teamsReplies) nudges() (cards int, perCard map[string][2]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	perCard = map[string][2]int{}
	for id, texts := range c.replies {
		var n [2]int
		for _, s := range texts {
			switch {
			case strings.HasPrefix(s, "Reminder:"):
				n[0]++
			case strings.HasPrefix(s, "Escalation:"):
				n[1]++
			}
		}
		perCard[id] = n
	}
	return c.cards, perCard
}

// Two serve processes on one PostgreSQL, a tool on Slack, Teams and email
// that reminds after 2s and escalates after 4s: each request gets one
// reminder and one escalation in its Slack thread, in its Teams card's
// thread, and by email to each approver, and no more while both keep
// sweeping.
func TestTwoServesNudgeEverySurfaceOnce(t *testing.T) {
	t.Parallel()
	const ana = "6a1f0c4e-1111-4222-8333-00000000000a"
	slackFake := bottest.New(t)
	teams := newTeamsReplies(t)
	smtpAddr, mailAPI := startMailpit(t)
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
executor:
  reminder_schedule: "@every 1s"
  card_schedule: "@every 1s"
agents: [{name: smoke-agent, token_sha256: %s}]
email:
  smtp: {addr: %q, from: "countersign@example.com", starttls: opportunistic}
  link_base: https://countersign.example.com/
teams:
  app_id: 00000000-0000-4000-8000-0000000000b0
  app_password: ${TEAMS_APP_PASSWORD}
  openid_metadata: %s/meta
  token_url: %s/token
  service_url: %s/
  conversations: {billing.credit: "19:billing@thread.tacv2"}
tools:
  billing.credit:
    channel: C0BILLING
    approvers: [U0ANA, "teams:%s", "email:ana@example.com", "email:ben@example.com"]
    surfaces: [slack, teams, email]
    dispatch: {url: "http://127.0.0.1:9/credits"}
    request_ttl: 1h
    remind_after: 2s
    escalate_after: 4s
    escalate_to: [S0ONCALL]
`, hex.EncodeToString(sum[:]), smtpAddr, teams.server.URL, teams.server.URL, teams.server.URL, ana))
	env := map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          cfg,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_INBOX":           "off",
		"SLACK_BOT_TOKEN":             "xoxb-test",
		"SLACK_SIGNING_SECRET":        "signing-secret",
		"COUNTERSIGN_SLACK_API_URL":   slackFake.URL(),
		"TEAMS_APP_PASSWORD":          "app-password",
	}
	procs := []*serveProcess{startServeProcess(t, env), startServeProcess(t, env)}
	t.Cleanup(func() {
		if t.Failed() {
			for i, p := range procs {
				t.Logf("serve %d:\n%s", i, p.logs.String())
			}
		}
	})
	const n = 2
	keys := make([]string, n)
	for i := range keys {
		body := fmt.Sprintf(`{"run_id":"r-nudge","step":%d,"tool":"billing.credit","summary":"Credit inv_%d","effect":{"invoice":"inv_%d"}}`, i, i, i)
		created := postSmokeIntent(t, procs[i%2].base, body)
		keys[i] = created.Key
	}

	// count reads every surface: Slack thread replies by kind, Teams
	// replies per card, and email nudges per recipient and request.
	type counts struct {
		slack       map[string]int // "Reminder" / "Escalation" → thread posts
		teamsCards  int
		teams       map[string][2]int
		email       map[string]int // "Reminder|ana@…|key" → messages
		emailTotal  int
		slackThread int
	}
	count := func() counts {
		c := counts{slack: map[string]int{}, email: map[string]int{}}
		for _, call := range slackFake.Calls("chat.postMessage") {
			if call.Form.Get("thread_ts") == "" {
				continue
			}
			c.slackThread++
			kind, _, _ := strings.Cut(call.Form.Get("text"), ":")
			c.slack[kind+"|"+call.Form.Get("thread_ts")]++
		}
		c.teamsCards, c.teams = teams.nudges()
		var list struct {
			Messages []struct {
				Subject string
				To      []struct{ Address string }
			}
		}
		getJSONOf(t, mailAPI+"/api/v1/messages?limit=1000", &list)
		for _, m := range list.Messages {
			kind, rest, _ := strings.Cut(m.Subject, ":")
			if kind != "Reminder" && kind != "Escalation" {
				continue
			}
			for _, key := range keys {
				if strings.Contains(rest, key[:12]) {
					for _, to := range m.To {
						c.email[kind+"|"+to.Address+"|"+key]++
						c.emailTotal++
					}
				}
			}
		}
		return c
	}
	complete := func(c counts) bool {
		teamsNudges := 0
		for _, k := range c.teams {
			teamsNudges += k[0] + k[1]
		}
		return c.slackThread >= 2*n && teamsNudges >= 2*n && c.emailTotal >= 2*2*n
	}
	until(t, 90*time.Second, "a reminder and an escalation on every surface", func() bool { return complete(count()) })
	// Both replicas keep sweeping every second: give them a few more
	// rounds to send anything twice, then count.
	time.Sleep(4 * time.Second) // waiting for something that must not happen
	c := count()

	if len(c.slack) != 2*n || c.slackThread != 2*n {
		t.Errorf("Slack thread posts %v (%d), want one reminder and one escalation per card", c.slack, c.slackThread)
	}
	for k, v := range c.slack {
		if v != 1 {
			t.Errorf("Slack: %s posted %d times", k, v)
		}
	}
	if c.teamsCards != n || len(c.teams) != n {
		t.Errorf("Teams: %d cards, replies on %d, want %d", c.teamsCards, len(c.teams), n)
	}
	for id, k := range c.teams {
		if k != [2]int{1, 1} {
			t.Errorf("Teams card %s: %d reminders, %d escalations; want one each", id, k[0], k[1])
		}
	}
	for _, kind := range []string{"Reminder", "Escalation"} {
		for _, to := range []string{"ana@example.com", "ben@example.com"} {
			for _, key := range keys {
				if got := c.email[kind+"|"+to+"|"+key]; got != 1 {
					t.Errorf("email: %d %s messages to %s for %s, want 1", got, kind, to, key[:12])
				}
			}
		}
	}
	if c.emailTotal != 2*2*n {
		t.Errorf("email: %d nudge messages, want %d", c.emailTotal, 2*2*n)
	}
}

// postSmokeIntent posts body as an intent with the smoke test's agent token
// to the serve at base, and returns what was created.
func postSmokeIntent(t *testing.T, base, body string) (created struct{ Key string }) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/requests", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+smokeToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&created)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/requests = %d", resp.StatusCode)
	}
	return created
}
