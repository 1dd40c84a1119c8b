package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/config"
)

// The alert rules load, and their unit tests (deploy/prometheus/alerts_test.yml)
// pass: each alert fires on the series that should raise it, after its for.
func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatalf("checking deploy/prometheus needs promtool (Debian's prometheus package; scripts/test-deps installs it): %v", err)
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../../deploy/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// metricName finds countersign's metric names in a query; a histogram's
// series are read by their family's name.
var metricName = regexp.MustCompile(`countersign_[a-z_]+`)

func familyOf(series string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if f, ok := strings.CutSuffix(series, suffix); ok {
			return f
		}
	}
	return series
}

// Every metric the Grafana dashboard and the alert rules read is one a live
// serve exports: serve runs with Slack (a fake API), an agent with a
// callback, and a provider; an intent is posted, approved with a signed
// click, dispatched and called back, and a slash command is answered; then
// /metrics is scraped and each name looked for.
func TestDashboardAndAlertsReadLiveMetrics(t *testing.T) {
	t.Parallel()
	var dispatched, calledBack atomic.Int32
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dispatched.Add(1)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"credit_1"}`)
	}))
	defer provider.Close()
	agentEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calledBack.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer agentEndpoint.Close()

	fake := bottest.New(t)
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := &config.Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "s3cret", SlackAPIURL: fake.URL()}
	cfg.File.Agents = []config.AgentConfig{{Name: "smoke-agent", TokenSHA256: config.StringOrList{hex.EncodeToString(sum[:])},
		Callback: &config.CallbackConfig{URL: agentEndpoint.URL + "/callbacks", Secret: config.StringOrList{"callback-secret"}}}}
	cfg.File.Tools = map[string]config.ToolConfig{"billing.credit": {
		Channel: "C0BILLING", Approvers: []string{"UANA"}, KeyAware: true,
		Dispatch: config.DispatchConfig{Method: "POST", URL: provider.URL + "/credits", Timeout: 5 * time.Second},
	}}
	cfg.File.Callbacks = config.CallbacksConfig{Poll: 50 * time.Millisecond, RetryBase: 50 * time.Millisecond}
	cfg.File.Retention.VerifySchedule = "@daily" // exports the audit verifier's gauges
	a := testApp(t, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := a.start(ctx); err != nil {
		t.Fatal(err)
	}
	base := a.http.base()

	post := func(path, contentType string, header http.Header, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", contentType)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := post("/v1/requests", "application/json", http.Header{"Authorization": {"Bearer " + smokeToken}},
		`{"run_id":"metrics-run","step":1,"tool":"billing.credit","effect":{"invoice":"inv_1","amount_cents":100}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/requests = %d", resp.StatusCode)
	}
	eventually(t, "a card posted", func() bool { return len(fake.Messages("C0BILLING")) > 0 })
	card := fake.Messages("C0BILLING")[0]
	click := bottest.ClickForm(bottest.ClickPayload("UANA", "C0BILLING", "approve", card.ButtonValue("approve")))
	if resp := post("/slack/interactions", "application/x-www-form-urlencoded", bottest.Sign("s3cret", time.Now(), click), string(click)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the signed approval answered %d", resp.StatusCode)
	}
	command := bottest.CommandForm("UANA", "C0BILLING", "help")
	if resp := post("/slack/commands", "application/x-www-form-urlencoded", bottest.Sign("s3cret", time.Now(), command), string(command)); resp.StatusCode != http.StatusOK {
		t.Fatalf("the signed slash command answered %d", resp.StatusCode)
	}
	eventually(t, "the write dispatched", func() bool { return dispatched.Load() > 0 })
	eventually(t, "the agent called back", func() bool { return calledBack.Load() > 0 })
	// The agent's answer comes before the deliverer records and counts it.
	eventually(t, "the callback counted", func() bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), "countersign_callback_attempts_total{")
	})

	// A counter moves just after the work it counts (a callback's attempt
	// once its answer is read): scrape until the slowest has.
	scrape := func() map[string]bool {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		exported := map[string]bool{}
		for _, line := range strings.Split(string(raw), "\n") {
			if name := metricName.FindString(line); name != "" && !strings.HasPrefix(line, "#") {
				exported[familyOf(name)] = true
			}
		}
		return exported
	}

	dashboard, err := os.ReadFile("../../deploy/grafana/countersign.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(dashboard, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	read := map[string]string{}
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			for _, name := range metricName.FindAllString(target.Expr, -1) {
				read[familyOf(name)] = "the dashboard's panel " + p.Title
			}
		}
	}
	alerts, err := os.ReadFile("../../deploy/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range metricName.FindAllString(string(alerts), -1) {
		if _, ok := read[familyOf(name)]; !ok {
			read[familyOf(name)] = "the alert rules"
		}
	}
	if len(read) < 15 {
		t.Fatalf("only %d metrics read by the dashboard and alerts: the search found too little", len(read))
	}
	// Exported only while what it counts exists; its own test exports it.
	delete(read, "countersign_ready_unconfigured_tool") // TestReadyRowsOfAToolNoLongerConfiguredAreReported
	missing := func(exported map[string]bool) []string {
		var out []string
		for name, where := range read {
			if !exported[name] {
				out = append(out, where+" reads "+name)
			}
		}
		return out
	}
	var last []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if last = missing(scrape()); len(last) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling /metrics
	}
	for _, m := range last {
		t.Errorf("%s, which a live /metrics does not export", m)
	}
}

// eventually waits up to 30 s for cond, polling: the components work in the
// background and none of them signals the test.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
