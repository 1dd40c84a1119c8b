package onedecision_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/emailsurface"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/teamssurface"
)

const (
	tool          = "billing.credit"
	channel       = "C0BILLING"
	signing       = "signing-secret"
	teamsApp      = "00000000-0000-4000-8000-0000000000b0"
	teamsConv     = "19:billing@thread.tacv2"
	slackReviewer = "U0ANA"
	teamsReviewer = "6a1f0c4e-1111-4222-8333-00000000000a"
	emailReviewer = "ana@example.com"
	oidcReviewer  = "alice@example.com"
)

// surfaces is one PostgreSQL with the real handlers of the four surfaces
// on it, one review service, and the fakes they talk to.
type surfaces struct {
	t       *testing.T
	store   store.Store
	pg      *postgres.Driver
	review  *approvals.Service
	bot     *bot.Bot
	slack   *bottest.Slack
	teams   *connector
	mailAPI string
	server  *httptest.Server // Slack's, Teams', the links' and the console's endpoints
	console *http.Client     // signed in as oidcReviewer
	csrf    string
}

func setup(t *testing.T) *surfaces {
	t.Helper()
	s := &surfaces{t: t, slack: bottest.New(t), teams: newConnector(t)}
	s.pg = storetest.NewDB(t)
	s.store = store.NewLedger(s.pg, store.Options{})
	var smtpAddr string
	smtpAddr, s.mailAPI = startMailpit(t)
	idp, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Shutdown() })
	all := []string{"slack", "teams", "email", "console"}
	s.review = approvalstest.New(t, approvals.Config{DB: s.store, Logger: slog.New(slog.DiscardHandler), Groups: &console.Groups{},
		Tools: map[string]approvals.Tool{tool: {Name: tool, Channel: channel, RequestTTL: time.Hour, MaxAttempts: 1, Surfaces: all,
			Approvers: []string{slackReviewer, "teams:" + teamsReviewer, "email:" + emailReviewer, "oidc:" + oidcReviewer}}}})

	mux := http.NewServeMux()
	s.server = httptest.NewServer(mux)
	t.Cleanup(s.server.Close)
	tm, err := teamssurface.New(teamssurface.Config{AppID: teamsApp, AppPassword: "app-password",
		OpenIDMetadata: s.teams.server.URL + "/meta", TokenURL: s.teams.server.URL + "/token", ServiceURL: s.teams.server.URL,
		Conversation: func(string) string { return teamsConv }, Review: s.review, Cards: s.store})
	if err != nil {
		t.Fatal(err)
	}
	em, err := emailsurface.New(emailsurface.Config{SMTP: emailsurface.SMTP{Addr: smtpAddr, Opportunistic: true, Timeout: 10 * time.Second},
		From: "countersign@example.com", LinkBase: s.server.URL, Secrets: [][]byte{[]byte("dispatch-secret")},
		Review: s.review, Cards: s.store, Attempts: s.store})
	if err != nil {
		t.Fatal(err)
	}
	client := slack.New("xoxb-test", slack.OptionAPIURL(s.slack.URL()+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	s.bot = bot.New(bot.Config{Slack: client, Review: s.review, Cards: s.store, Lookup: lookup.Service{DB: s.store},
		SigningSecrets: []string{signing}, PostInterval: -1, Surfaces: []surface.Adapter{tm.Surface(), em.Surface()},
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(s.bot.Wait)
	oc := idp.Config()
	mux.Handle("POST /slack/interactions", s.bot.Interactions())
	mux.Handle("POST "+teamssurface.MessagesPath, tm.Handler())
	mux.Handle(emailsurface.LinkPath, em.Handler())
	mux.Handle(console.Prefix+"/", console.New(console.Options{Service: s.review, Store: s.store,
		Issuer: oc.Issuer, ClientID: oc.ClientID, ClientSecret: oc.ClientSecret, RedirectURL: s.server.URL + console.Prefix + "/callback",
		Secrets: [][]byte{[]byte("dispatch-secret")}}))

	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.console = &http.Client{Jar: jar, Timeout: 30 * time.Second}
	idp.QueueUser(&mockoidc.MockUser{Subject: "sub-alice", Email: oidcReviewer, EmailVerified: true})
	status, page := s.get(console.Prefix + "/")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		t.Fatalf("signing in to the console ended with %d:\n%s", status, page)
	}
	s.csrf = m[1]
	return s
}

// get reads a console page as the signed-in reviewer.
func (s *surfaces) get(path string) (int, string) {
	resp, err := s.console.Get(s.server.URL + path)
	if err != nil {
		s.t.Errorf("GET %s: %v", path, err)
		return 0, ""
	}
	return resp.StatusCode, readAll(resp)
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// deliver runs the outbox until nothing is pending.
func (s *surfaces) deliver() {
	s.t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(45 * time.Second); ; {
		if _, err := s.bot.DeliverOnce(ctx); err != nil {
			s.t.Fatalf("delivering: %v", err)
		}
		var pending int
		if err := s.pg.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE state = 'pending'`).Scan(&pending); err != nil {
			s.t.Fatal(err)
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%d outbox rows still pending", pending)
		}
		time.Sleep(20 * time.Millisecond) // rows postponed until their card is posted
	}
}

// card is where one request can be decided on each surface.
type card struct {
	req         store.Request
	slackTS     string // its Slack card
	slackValue  string // the approve button's value
	teamsID     string // its Teams card's activity
	teamsReject map[string]any
	emailLink   string // the approve link sent to emailReviewer
}

// cards finds each request's card on Slack, Teams and email.
func (s *surfaces) cards(reqs []store.Request) map[string]*card {
	s.t.Helper()
	out := map[string]*card{}
	for _, r := range reqs {
		out[r.ID] = &card{req: r}
	}
	for _, m := range s.slack.Messages(channel) {
		v := m.ButtonValue(bot.ActionApprove)
		var d struct {
			R string `json:"r"`
		}
		if json.Unmarshal([]byte(v), &d) == nil && out[d.R] != nil {
			out[d.R].slackTS, out[d.R].slackValue = m.TS, v
		}
	}
	s.teams.mu.Lock()
	for id, act := range s.teams.posted {
		var c struct {
			Actions []struct {
				Verb string         `json:"verb"`
				Data map[string]any `json:"data"`
			} `json:"actions"`
		}
		_ = json.Unmarshal([]byte(cardOf(act)), &c)
		for _, a := range c.Actions {
			if rid, _ := a.Data["request_id"].(string); a.Verb == "reject" && out[rid] != nil {
				out[rid].teamsID, out[rid].teamsReject = id, a.Data
			}
		}
	}
	s.teams.mu.Unlock()
	approve := regexp.MustCompile(`(?m)^Approve:\s*\n(\S+)`)
	for _, m := range messages(s.t, s.mailAPI, true) {
		match := approve.FindStringSubmatch(m.Text)
		if !strings.HasPrefix(m.Subject, "Review:") || match == nil {
			continue
		}
		if rid := linkRequest(match[1]); out[rid] != nil {
			out[rid].emailLink = match[1]
		}
	}
	for _, c := range out {
		if c.slackTS == "" || c.teamsID == "" || c.emailLink == "" {
			s.t.Fatalf("request %s lacks a card: Slack %q, Teams %q, email %q", c.req.ID, c.slackTS, c.teamsID, c.emailLink)
		}
	}
	return out
}

// linkRequest is the request an email link is for: the first line of its
// token's payload (e1.<payload>.<signature>).
func linkRequest(link string) string {
	token := link[strings.LastIndex(link, "/")+1:]
	parts := strings.Split(strings.TrimPrefix(token, "e1."), ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return ""
	}
	id, _, _ := strings.Cut(string(payload), "\n")
	return id
}

// answer is what one surface's attempt got: decided, already decided, or
// something else (a failure).
type answer int

const (
	other answer = iota
	decided
	alreadyDecided
)

func (a answer) String() string { return [...]string{"other", "decided", "already_decided"}[a] }

// The four attempts, one per surface: Slack approves, Teams rejects, email
// approves, the console rejects.

func (s *surfaces) slackClick(c *card) answer {
	body := bottest.ClickForm(bottest.ClickPayload(slackReviewer, channel, bot.ActionApprove, c.slackValue))
	req, _ := http.NewRequest(http.MethodPost, s.server.URL+"/slack/interactions", bytes.NewReader(body))
	for k, v := range bottest.Sign(signing, time.Now(), body) {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Errorf("Slack click: %v %v", resp, err)
		return other
	}
	readAll(resp)
	return other // the ephemeral answer says what it did (slackAnswers)
}

func (s *surfaces) teamsClick(c *card) answer {
	b, _ := json.Marshal(s.teams.invoke(teamsReviewer, c.teamsID, c.teamsReject))
	req, _ := http.NewRequest(http.MethodPost, s.server.URL+teamssurface.MessagesPath, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+s.teams.token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Errorf("Teams click: %v %v", resp, err)
		return other
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(readAll(resp)), &out)
	shown := cardOf(out)
	switch {
	case strings.Contains(shown, "Already "):
		return alreadyDecided
	case strings.Contains(shown, "Rejected by teams:"+teamsReviewer):
		return decided
	}
	s.t.Errorf("Teams answered %v", out)
	return other
}

func (s *surfaces) emailPost(c *card) answer {
	link := c.emailLink
	token := link[strings.LastIndex(link, "/")+1:]
	resp, err := http.PostForm(link, url.Values{"token": {token}, "address": {emailReviewer}})
	if err != nil {
		s.t.Errorf("email POST: %v", err)
		return other
	}
	page := readAll(resp)
	switch {
	case resp.StatusCode == http.StatusOK && strings.Contains(page, "You approved"):
		return decided
	case resp.StatusCode == http.StatusConflict && strings.Contains(page, "Already decided"):
		return alreadyDecided
	}
	s.t.Errorf("the email link answered %d:\n%s", resp.StatusCode, page)
	return other
}

func (s *surfaces) consolePost(c *card) answer {
	form := url.Values{"csrf": {s.csrf}, "request_id": {c.req.ID}, "round": {"1"}, "payload_hash": {c.req.PayloadHash}, "verdict": {"reject"}}
	req, _ := http.NewRequest(http.MethodPost, s.server.URL+console.Prefix+"/decide", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := s.console.Do(req)
	if err != nil {
		s.t.Errorf("console POST: %v", err)
		return other
	}
	page := readAll(resp)
	switch {
	case strings.Contains(page, `data-code="decided"`):
		return decided
	case strings.Contains(page, `data-code="already_decided"`):
		return alreadyDecided
	}
	s.t.Errorf("the console answered %d:\n%s", resp.StatusCode, page)
	return other
}

// 200 requests on a tool on Slack, Teams, email and the console, each
// decided on all four at once: every request has one decision, whose
// surface is the one that answered it was decided, the three others
// answered already decided, and at the end every surface shows the
// decision (Slack's card, the Teams card, an outcome message to the email
// approver, the console's page).
func TestConcurrentDecisionsOnEverySurfaceGiveOne(t *testing.T) {
	s := setup(t)
	const n = 200
	reqs := make([]store.Request, n)
	for i := range reqs {
		effect := fmt.Sprintf(`{"invoice":"inv_%d","amount_cents":%d,"currency":"USD"}`, i, 100+i)
		reqs[i] = approvalstest.Submit(t, s.review, "billing-agent", approvalstest.Intent(&approvalstest.IntentOpts{
			Step: new(fmt.Sprint(i)), Tool: new(tool), Effect: &effect, Summary: new(fmt.Sprintf("Credit inv_%d", i)),
		}))
	}
	start := time.Now()
	s.deliver()
	posted := time.Since(start)
	cards := s.cards(reqs)

	type result struct{ slack, teams, email, console answer }
	results := make([]result, n)
	decideStart := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16) // requests decided at once, four attempts each
	for i, r := range reqs {
		c := cards[r.ID]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var each sync.WaitGroup
			gate := make(chan struct{})
			each.Go(func() { <-gate; results[i].slack = s.slackClick(c) })
			each.Go(func() { <-gate; results[i].teams = s.teamsClick(c) })
			each.Go(func() { <-gate; results[i].email = s.emailPost(c) })
			each.Go(func() { <-gate; results[i].console = s.consolePost(c) })
			close(gate)
			each.Wait()
		})
	}
	wg.Wait()
	decisions := time.Since(decideStart)
	s.bot.Wait()

	// Slack answers in an ephemeral message: "You approved" naming the
	// request's short key, or "Already …" naming the decision that stood.
	slackSaid := map[string]answer{}
	slackAlready := 0
	for _, call := range s.slack.Calls("chat.postEphemeral") {
		text := call.Form.Get("text")
		if strings.HasPrefix(text, "Already ") {
			slackAlready++
		}
		for _, r := range reqs {
			if strings.Contains(text, approvals.ShortKey(r.Key)) || strings.Contains(text, r.ID) {
				switch {
				case strings.HasPrefix(text, "You approved"):
					slackSaid[r.ID] = decided
				case strings.HasPrefix(text, "Already "):
					slackSaid[r.ID] = alreadyDecided
				}
			}
		}
	}
	ctx := context.Background()
	via := map[string]int{}
	for i, r := range reqs {
		res := results[i]
		res.slack = slackSaid[r.ID]
		d, err := s.store.DecisionFor(ctx, r.ID, 1)
		if err != nil {
			t.Fatalf("request %d has no decision: %v", i, err)
		}
		via[d.Via]++
		answers := map[string]answer{"slack": res.slack, "teams": res.teams, "email": res.email, "console": res.console}
		for surfaceName, a := range answers {
			want := alreadyDecided
			if surfaceName == d.Via {
				want = decided
			}
			if a != want && !(surfaceName == "slack" && a == other && want == alreadyDecided) {
				t.Errorf("request %d decided via %s by %s: %s answered %s, want %s", i, d.Via, d.DecidedBy, surfaceName, a, want)
			}
		}
		wantVerdict := map[string]store.Verdict{"slack": store.VerdictApprove, "teams": store.VerdictReject, "email": store.VerdictApprove, "console": store.VerdictReject}[d.Via]
		if d.Verdict != wantVerdict {
			t.Errorf("request %d: %s via %s, but that surface cast %s", i, d.Verdict, d.Via, wantVerdict)
		}
	}
	if slackAlready != n-via["slack"] || len(slackSaid) < via["slack"] {
		t.Errorf("Slack answered %d clicks already decided and %d decided; want %d and %d", slackAlready, len(slackSaid), n-via["slack"], via["slack"])
	}
	var decisionRows int
	for _, r := range reqs {
		h, err := s.store.HistoryOf(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if h.Decision != nil {
			decisionRows++
		}
	}
	if decisionRows != n {
		t.Errorf("%d requests decided, want %d", decisionRows, n)
	}
	t.Logf("%d requests: cards on three surfaces in %s, %d decisions attempted in %s; won by %v",
		n, posted.Round(time.Millisecond), 4*n, decisions.Round(time.Millisecond), via)

	// Every surface follows the request to its decision.
	s.deliver()
	outcome := map[string]bool{}
	for _, m := range messages(t, s.mailAPI, false) {
		if strings.HasPrefix(m.Subject, "Decided:") && len(m.To) == 1 && m.To[0].Address == emailReviewer {
			for _, r := range reqs {
				if strings.Contains(m.Subject, approvals.ShortKey(r.Key)) {
					if outcome[r.ID] {
						t.Errorf("two outcome messages for request %s", r.ID)
					}
					outcome[r.ID] = true
				}
			}
		}
	}
	for i, r := range reqs {
		d, _ := s.store.DecisionFor(ctx, r.ID, 1)
		word := map[store.Verdict]string{store.VerdictApprove: "Approved", store.VerdictReject: "Rejected"}[d.Verdict]
		c := cards[r.ID]
		if m, ok := s.slack.Message(channel, c.slackTS); !ok || m.Updates == 0 || !strings.Contains(string(m.Blocks), word) || strings.Contains(string(m.Blocks), bot.ActionApprove) {
			t.Errorf("request %d (%s): Slack's card does not show it: %s", i, word, m.Blocks)
		}
		s.teams.mu.Lock()
		ups := s.teams.updated[c.teamsID]
		s.teams.mu.Unlock()
		if len(ups) == 0 || !strings.Contains(cardOf(ups[len(ups)-1]), word+" by") {
			t.Errorf("request %d (%s): the Teams card was not updated to show it", i, word)
		}
		if !outcome[r.ID] {
			t.Errorf("request %d: no outcome message to %s", i, emailReviewer)
		}
		if status, page := s.get(console.Prefix + "/requests/" + r.ID); status != http.StatusOK ||
			!strings.Contains(page, `<p id="decision"><span class="state">`+string(d.Verdict)+`</span> by `+d.DecidedBy) || strings.Contains(page, `name="verdict"`) {
			t.Errorf("request %d: the console page (%d) does not show the decision %s by %s", i, status, d.Verdict, d.DecidedBy)
		}
	}
}
