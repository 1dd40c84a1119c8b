package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store/storetest"
)

// The local run: no configuration and no database URL. An agent's curl
// creates a request, the inbox approves it, and the executor delivers it to
// the built-in sandbox, all on the embedded store.
func TestLocalRunApprovesThroughTheInboxToTheSandbox(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, out := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATA_DIR": dir,
		"COUNTERSIGN_LISTEN":   "127.0.0.1:0",
	}))
	if _, err := os.Stat(filepath.Join(dir, storeFile)); err != nil {
		t.Fatalf("no embedded store in the data directory: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, localTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	banner := waitFor(t, out, "curl -s "+base+"/v1/requests")
	if !strings.Contains(banner, "Authorization: Bearer "+token) || !strings.Contains(banner, base+"/inbox/?token=") {
		t.Fatalf("the banner lacks the token or the inbox's entry link:\n%s", banner)
	}
	browser := newBrowserClient()
	// Opening serve's address in a browser leads to the inbox.
	if resp, err := browser.Get(base + "/"); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/inbox/" {
		t.Fatalf("GET / = %d, Location %q; want a redirect to the inbox", resp.StatusCode, resp.Header.Get("Location"))
	}

	// The intent from the banner's curl.
	call := func(method, path string, body io.Reader, header map[string]string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, body)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	agent := map[string]string{"Authorization": "Bearer " + token}
	code, body := call(http.MethodPost, "/v1/requests", strings.NewReader(
		`{"run_id": "run-1", "step": 1, "tool": "demo.refund", "effect": {"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}, "summary": "Refund <b>12.50</b> EUR"}`), agent)
	if code != http.StatusCreated {
		t.Fatalf("POST = %d %s", code, body)
	}
	var created struct {
		ID          string `json:"id"`
		Key         string `json:"key"`
		PayloadHash string `json:"payload_hash"`
	}
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}

	// The inbox opens with the banner's link, once; then the card is there, escaped.
	if code, page := call(http.MethodGet, "/inbox/", nil, nil); code != http.StatusForbidden || strings.Contains(string(page), created.Key[:12]) {
		t.Fatalf("the inbox without its link = %d:\n%s", code, page)
	}
	enterInbox(t, browser, inboxEntry(t, out))
	code, page := call(http.MethodGet, "/inbox/", nil, nil)
	if code != http.StatusOK || !strings.Contains(string(page), created.Key[:12]) || !strings.Contains(string(page), "Refund &lt;b&gt;12.50&lt;/b&gt; EUR") {
		t.Fatalf("inbox = %d, lacks the escaped card:\n%s", code, page)
	}

	// Approve twice, as a double click would: one decision.
	form := url.Values{"request_id": {created.ID}, "round": {"1"}, "payload_hash": {created.PayloadHash}, "verdict": {"approve"}, "confirm": {"yes"}}
	for range 2 {
		if code, body := call(http.MethodPost, "/inbox/decide", strings.NewReader(form.Encode()),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusSeeOther {
			t.Fatalf("decide = %d %s", code, body)
		}
	}

	// The agent long-polls until the sandbox has the write.
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := call(http.MethodGet, "/v1/requests/"+created.Key+"?wait=5s", nil, agent)
		if code != http.StatusOK {
			t.Fatalf("GET = %d %s", code, body)
		}
		var view struct {
			Status    string `json:"status"`
			Decision  *struct{ Via, By string }
			Execution *struct {
				State    string `json:"state"`
				Attempts int    `json:"attempts"`
			} `json:"execution"`
		}
		if err := json.Unmarshal(body, &view); err != nil {
			t.Fatal(err)
		}
		if view.Execution != nil && view.Execution.State == "succeeded" {
			if view.Status != "approved" || view.Decision == nil || view.Decision.Via != "inbox" || view.Decision.By != config.DefaultInboxReviewer || view.Execution.Attempts != 1 {
				t.Fatalf("view = %s", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never succeeded: %s\n%s", body, out.String())
		}
	}
	if code, body := call(http.MethodGet, "/sandbox/objects?key="+created.Key, nil, nil); code != http.StatusOK || !strings.Contains(string(body), created.Key) {
		t.Fatalf("the sandbox does not hold the write: %d %s", code, body)
	}

	// The request page shows the outcome and the timeline; the lookup finds it.
	if code, page := call(http.MethodGet, "/inbox/requests/"+created.ID, nil, nil); code != http.StatusOK ||
		!strings.Contains(string(page), "succeeded") || !strings.Contains(string(page), "requested") {
		t.Fatalf("request page = %d:\n%s", code, page)
	}
	if code, page := call(http.MethodGet, "/inbox/lookup?q=ord_1001", nil, nil); code != http.StatusOK || !strings.Contains(string(page), created.Key[:12]) {
		t.Fatalf("lookup = %d:\n%s", code, page)
	}
}

// newBrowserClient returns a client that keeps cookies, as a browser does,
// and hands redirects back to the test.
func newBrowserClient() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		panic(err)
	}
	return &http.Client{
		Timeout:       30 * time.Second,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// inboxEntryPattern finds the inbox's entry link in serve's output: the
// local banner's line, or the url of the log line with a configuration file.
var inboxEntryPattern = regexp.MustCompile(`(?:review inbox: |"url":")(http://[^\s"]+/inbox/\?token=[^\s"]+)`)

// inboxEntry waits for serve to print the inbox's entry link and returns it.
func inboxEntry(t *testing.T, out *syncBuffer) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if m := inboxEntryPattern.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		time.Sleep(10 * time.Millisecond) // polling serve's output, not waiting for an event
	}
	t.Fatalf("serve printed no inbox entry link:\n%s", out.String())
	return ""
}

// enterInbox opens the entry link with client, as the person at the
// terminal does, and fails the test unless it sets the session.
func enterInbox(t *testing.T, client *http.Client, entry string) {
	t.Helper()
	resp, err := client.Get(entry)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/inbox/" || len(resp.Cookies()) != 1 {
		t.Fatalf("the entry link answered %d, Location %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
}

// waitFor polls a process's output until it contains s, and returns it.
func waitFor(t *testing.T, out *syncBuffer, s string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if o := out.String(); strings.Contains(o, s) {
			return o
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the output never contained %q:\n%s", s, out.String())
	return ""
}

func TestLocalBannerNamesTheStoreInUse(t *testing.T) {
	t.Parallel()
	var pg, file strings.Builder
	printLocalBanner(&pg, "http://127.0.0.1:8080", "PostgreSQL", "tok", "")
	printLocalBanner(&file, "http://127.0.0.1:8080", "/data/countersign.db", "tok", "")
	if !strings.Contains(pg.String(), "store:        PostgreSQL (COUNTERSIGN_DATABASE_URL)") || strings.Contains(pg.String(), "embedded") {
		t.Errorf("banner with PostgreSQL:\n%s", pg.String())
	}
	if !strings.Contains(file.String(), "store:        /data/countersign.db (embedded;") {
		t.Errorf("banner with the embedded store:\n%s", file.String())
	}
}

// caller returns a function that sends one request to base with client and
// returns the status and the body.
func caller(t *testing.T, client *http.Client, base string) func(method, path, body string, header map[string]string) (int, []byte) {
	return func(method, path, body string, header map[string]string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
}

// postedRequest is what tests read back from a request the hook created.
type postedRequest struct {
	ID          string `json:"id"`
	Key         string `json:"key"`
	PayloadHash string `json:"payload_hash"`
}

// postThenApprove posts intent as the agent holding token, opens the
// inbox's entry link from serve's output with client, as the person at the
// terminal does, and approves the request there.
func postThenApprove(t *testing.T, client *http.Client, base string, logs *syncBuffer, token, intent string) postedRequest {
	t.Helper()
	call := caller(t, client, base)
	code, body := call(http.MethodPost, "/v1/requests", intent, map[string]string{"Authorization": "Bearer " + token})
	if code != http.StatusCreated {
		t.Fatalf("POST = %d %s", code, body)
	}
	var created postedRequest
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	enterInbox(t, client, inboxEntry(t, logs))
	form := url.Values{"request_id": {created.ID}, "round": {"1"}, "payload_hash": {created.PayloadHash}, "verdict": {"approve"}}
	if code, page := call(http.MethodPost, "/inbox/decide", form.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusSeeOther {
		t.Fatalf("approving in the inbox = %d:\n%s", code, page)
	}
	return created
}

// The local run's tool and agent are added to a copy: the configuration
// they start from is left as it was read.
func TestWithLocalLeavesItsInputAlone(t *testing.T) {
	t.Parallel()
	in := &config.Config{}
	in.File.Tools = map[string]config.ToolConfig{"billing.credit": {Approvers: []string{"U0ANA"}}}
	local := withLocal(in, "http://127.0.0.1:8080", "cs_local_token")
	if _, ok := in.File.Tools[localTool]; ok || in.DispatchSecret != "" {
		t.Error("withLocal changed its input")
	}
	if got := local.File.Tools[localTool].Dispatch.URL; got != "http://127.0.0.1:8080"+sandboxPath+"/refunds" {
		t.Errorf("demo tool dispatches to %q", got)
	}
}

// The demo tool has an effect schema: MCP lists it as a typed tool of its
// own, besides request_write, and its input schema is the refund's.
func TestLocalRunListsTheDemoToolAsATypedMCPTool(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _ := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATA_DIR": dir,
		"COUNTERSIGN_LISTEN":   "127.0.0.1:0",
	}))
	raw, err := os.ReadFile(filepath.Join(dir, localTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	resp, body := mcpPost(t, base, token, "", mcpInitialize, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize = %d %s", resp.StatusCode, body)
	}
	resp, body = mcpPost(t, base, token, session, `{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`, nil)
	var list struct {
		Result struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties struct {
						Effect struct {
							Required []string `json:"required"`
						} `json:"effect"`
					} `json:"properties"`
				} `json:"inputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	// One message, as a server-sent event: its data line.
	_, data, _ := strings.Cut(string(body), "data: ")
	if err := json.Unmarshal([]byte(data), &list); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("tools/list = %d %v: %s", resp.StatusCode, err, body)
	}
	names := map[string][]string{}
	for _, tool := range list.Result.Tools {
		names[tool.Name] = tool.InputSchema.Properties.Effect.Required
	}
	if _, ok := names["request_write"]; !ok || strings.Join(names["request_demo_refund"], ",") != "order,amount_cents,currency" {
		t.Errorf("tools/list lacks request_write, or request_demo_refund with the refund's schema: %s", body)
	}
}

// With a configuration file, a run on the embedded store prints the
// banner in plain text whatever the log format; a PostgreSQL deployment
// without a local: reviewer keeps the inbox's link in its log alone.
func TestConfiguredBannerOnlyForLocalRuns(t *testing.T) {
	t.Parallel()
	configPath := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
    effect_schema:
      type: object
      examples: [{invoice: inv_1, amount_cents: 100}]
`, tokenHashOf(smokeToken)))
	env := map[string]string{
		"COUNTERSIGN_CONFIG":          configPath,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT":      "json",
		"COUNTERSIGN_INBOX":           "on",
	}
	embedded := maps.Clone(env)
	embedded["COUNTERSIGN_DATA_DIR"] = t.TempDir()
	base, logs := startServeWith(t, envFrom(embedded))
	banner := waitFor(t, logs, "curl -s "+base+"/v1/requests")
	for _, want := range []string{"countersign is running with " + configPath, "\n  review inbox: " + base + "/inbox/?token=",
		"billing.credit, sent to http://127.0.0.1:9/credits", `"tool": "billing.credit", "effect": {"amount_cents":100,"invoice":"inv_1"}`,
		`Bearer $COUNTERSIGN_TOKEN`} {
		if !strings.Contains(banner, want) {
			t.Errorf("the banner lacks %q:\n%s", want, banner)
		}
	}
	if strings.Contains(banner, smokeSecret) || strings.Contains(banner, "countersign approve") {
		t.Errorf("the banner prints the secret, or offers local approvals without a local: reviewer:\n%s", banner)
	}

	postgres := maps.Clone(env)
	postgres["COUNTERSIGN_DATABASE_URL"] = storetest.NewURL(t)
	_, logs = startServeWith(t, envFrom(postgres))
	inboxEntry(t, logs) // the log line's
	if strings.Contains(logs.String(), "countersign is running") || strings.Contains(logs.String(), "curl -s") {
		t.Errorf("a PostgreSQL deployment without a local reviewer printed the banner:\n%s", logs.String())
	}
}
