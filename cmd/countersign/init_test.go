package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

// runInit runs `countersign init args…` in-process.
func runInit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(context.Background(), append([]string{"init"}, args...), envFrom(nil), nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

var initTokenPattern = regexp.MustCompile(`export COUNTERSIGN_TOKEN=(\S+)`)

// initToken is the token init printed.
func initToken(t *testing.T, stdout string) string {
	t.Helper()
	m := initTokenPattern.FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("init printed no token:\n%s", stdout)
	}
	return m[1]
}

// initEnvironment is countersign.env of dir as a shell loads it, the way
// init says to: set -a; . ./countersign.env; set +a.
func initEnvironment(t *testing.T, dir string) map[string]string {
	t.Helper()
	cmd := exec.Command("sh", "-c", "set -a; . ./"+initEnvFile+"; set +a; exec env")
	cmd.Dir, cmd.Env = dir, []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("loading %s: %v", initEnvFile, err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.HasPrefix(k, "COUNTERSIGN_") {
			env[k] = v
		}
	}
	return env
}

// init writes the configuration and its environment, prints the token once
// and writes it nowhere, and never replaces a file without --force.
func TestInitWritesOnceAndRefusesToReplace(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "project") // created by init
	code, stdout, stderr := runInit(t, dir)
	if code != 0 {
		t.Fatalf("init = %d: %s", code, stderr)
	}
	token := initToken(t, stdout)
	if strings.Count(stdout, token) != 1 {
		t.Errorf("the token is printed %d times", strings.Count(stdout, token))
	}
	yml, err := os.ReadFile(filepath.Join(dir, initConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(filepath.Join(dir, initEnvFile))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(yml, []byte(token)) || bytes.Contains(env, []byte(token)) || !bytes.Contains(yml, []byte(tokenHashOf(token))) {
		t.Errorf("the files hold the token, or the configuration lacks its hash:\n%s\n%s", yml, env)
	}
	if info, err := os.Stat(filepath.Join(dir, initEnvFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, %v; want owner only", initEnvFile, info.Mode(), err)
	}
	loaded := initEnvironment(t, dir)
	secret := loaded["COUNTERSIGN_DISPATCH_SECRET"]
	if len(secret) < 32 || strings.Contains(stdout, secret) || bytes.Contains(yml, []byte(secret)) {
		t.Errorf("the dispatch secret %q is short, printed, or in the configuration", secret)
	}
	for _, want := range []string{"set -a; . ./" + initEnvFile + "; set +a; countersign serve", "countersign dev-provider --listen " + initProvider,
		"curl -s http://" + initListen + "/v1/requests", `"tool": "` + initHTTPTool + `"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init does not say %q:\n%s", want, stdout)
		}
	}

	// Again: refused, exit 1, nothing changed.
	code, stdout, stderr = runInit(t, dir)
	if code != 1 || stdout != "" || !strings.Contains(stderr, initConfigFile+" exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("init over an initialised directory = %d, %q, %q", code, stdout, stderr)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, initConfigFile)); !bytes.Equal(again, yml) {
		t.Error("a refused init changed the configuration")
	}
	// A configuration of the user's alone is not replaced either, and no
	// environment is written beside it.
	own := t.TempDir()
	if err := os.WriteFile(filepath.Join(own, initConfigFile), []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runInit(t, own); code != 1 || !strings.Contains(stderr, "exists") {
		t.Errorf("init over the user's configuration = %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(own, initEnvFile)); !os.IsNotExist(err) {
		t.Errorf("a refused init wrote %s: %v", initEnvFile, err)
	}
	// --force replaces both, with a new token and secret; flags may follow DIR.
	code, stdout, stderr = runInit(t, dir, "--force", "--listen", "127.0.0.1:18080")
	if code != 0 {
		t.Fatalf("init --force = %d: %s", code, stderr)
	}
	if initToken(t, stdout) == token || initEnvironment(t, dir)["COUNTERSIGN_DISPATCH_SECRET"] == secret ||
		initEnvironment(t, dir)["COUNTERSIGN_LISTEN"] != "127.0.0.1:18080" {
		t.Error("init --force kept the token, the secret, or the old listen address")
	}
	if code, _, stderr := runInit(t, "--listen", "nonsense", t.TempDir()); code != 2 || !strings.Contains(stderr, "--listen") {
		t.Errorf("init --listen nonsense = %d, %q", code, stderr)
	}
}

// What init writes passes config check with the environment it writes.
func TestInitConfigurationPassesConfigCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, stderr := runInit(t, dir); code != 0 {
		t.Fatalf("init = %d: %s", code, stderr)
	}
	env := initEnvironment(t, dir)
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"config", "check", env["COUNTERSIGN_CONFIG"]}, envFrom(env), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("config check = %d:\n%s", code, stderr.String())
	}
	for _, want := range []string{initHTTPTool + ":", initAgentTool + ":", "execute: agent", "effect_schema:", "url: http://" + initProvider + "/tickets"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("the effective configuration lacks %q:\n%s", want, stdout.String())
		}
	}
	if env["COUNTERSIGN_INBOX"] != "on" || env["COUNTERSIGN_DATA_DIR"] != filepath.Join(dir, initDataDir) || env["COUNTERSIGN_LISTEN"] != initListen {
		t.Errorf("the environment: %v", env)
	}
}

// freeLoopbackAddr is a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// shellProcess runs line with sh in dir, as a user pastes it, and waits
// until its output matches ready; the test's end stops it.
func shellProcess(t *testing.T, dir, line string, env []string, ready *regexp.Regexp) *syncBuffer {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs, matched := &syncBuffer{}, make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(out)
		closed := false
		for scanner.Scan() {
			_, _ = logs.Write(append(scanner.Bytes(), '\n'))
			if !closed && ready.MatchString(logs.String()) {
				close(matched)
				closed = true
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case <-matched:
	case <-time.After(30 * time.Second):
		t.Fatalf("%q never printed %s:\n%s", line, ready, logs.String())
	}
	return logs
}

// The step from the demo to one's own tools: countersign init in an empty
// directory, then serve and dev-provider exactly as init says to run them.
// The HTTP tool's write reaches dev-provider once, signed; MCP lists a
// typed tool for each tool; the agent-executed tool's receipt is taken by
// dev-provider for the approved body and refused for a changed one; serve
// prints the inbox's link and a curl in plain text among JSON logs.
func TestInitThenServeIsAWorkingLocalRun(t *testing.T) {
	t.Parallel()
	bin := servetest.Binary(t)
	dir := t.TempDir()
	listen, provider := freeLoopbackAddr(t), freeLoopbackAddr(t)
	out, err := exec.Command(bin, "init", "--listen", listen, "--provider", provider, dir).Output()
	if err != nil {
		t.Fatalf("init: %v", err)
	}
	printed := string(out)
	token := initToken(t, printed)
	serveLine := regexp.MustCompile(`(?m)^  (set -a; .*; countersign serve)$`).FindStringSubmatch(printed)
	providerLine := regexp.MustCompile(`(?m)^  (set -a; .*; countersign dev-provider .*)$`).FindStringSubmatch(printed)
	if serveLine == nil || providerLine == nil {
		t.Fatalf("init does not say how to run serve and dev-provider:\n%s", printed)
	}
	// The lines as printed, countersign found on PATH; exec, so that
	// stopping the shell stops the command. The test's JSON logs stay, and
	// an ambient database URL goes.
	path := "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	execLast := func(line, command string) string {
		return strings.Replace(line, "countersign "+command, "exec countersign "+command, 1)
	}
	cmd := exec.Command("sh", "-c", execLast(serveLine[1], "serve"))
	cmd.Dir = dir
	serve := servetest.StartCommand(t, cmd, path, "COUNTERSIGN_DATABASE_URL=", "COUNTERSIGN_LOG_FORMAT=json")
	if serve.Addr != listen {
		t.Fatalf("serve listens on %s, init said %s", serve.Addr, listen)
	}
	devLogs := shellProcess(t, dir, execLast(providerLine[1], "dev-provider"), []string{path}, regexp.MustCompile(`dev-provider listening on http://`))
	if !strings.Contains(devLogs.String(), "http://"+listen+"/.well-known/jwks.json") {
		t.Errorf("dev-provider does not check receipts against serve's JWKS:\n%s", devLogs.String())
	}

	// The banner, in plain text among the JSON lines.
	if !serve.WaitLog("review inbox: http://"+listen+"/inbox/?token=", 10*time.Second) ||
		!serve.WaitLog(`curl -s http://`+listen+`/v1/requests -H "Authorization: Bearer $COUNTERSIGN_TOKEN"`, 10*time.Second) {
		t.Fatalf("serve printed no plain-text banner:\n%s", serve.Logs())
	}
	if strings.Contains(serve.Logs(), token) {
		t.Error("serve printed the agent's token")
	}

	call := caller(t, &http.Client{Timeout: 30 * time.Second}, serve.URL)
	agent := map[string]string{"Authorization": "Bearer " + token}
	approve := func(key string) {
		t.Helper()
		c := exec.Command("sh", "-c", `set -a; . ./`+initEnvFile+`; set +a; exec countersign approve "$0"`, key)
		c.Dir, c.Env = dir, append(os.Environ(), path)
		out, err := c.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "approved ") {
			t.Fatalf("countersign approve: %v: %s", err, out)
		}
	}
	post := func(step int, tool, effect string) postedRequest {
		t.Helper()
		code, body := call(http.MethodPost, "/v1/requests", fmt.Sprintf(`{"run_id": "run-init", "step": %d, "tool": %q, "effect": %s}`, step, tool, effect), agent)
		var created postedRequest
		if code != http.StatusCreated || json.Unmarshal(body, &created) != nil {
			t.Fatalf("POST %s = %d %s", tool, code, body)
		}
		return created
	}

	// The HTTP tool: approved from code, sent once, signed.
	ticket := post(1, initHTTPTool, `{"title": "Printer jammed", "body": "E42 since this morning", "priority": "high"}`)
	approve(ticket.Key)
	for deadline := time.Now().Add(20 * time.Second); ; {
		code, body := call(http.MethodGet, "/v1/requests/"+ticket.Key+"?wait=5s", "", agent)
		var view struct {
			Execution *struct{ State string } `json:"execution"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &view) != nil {
			t.Fatalf("GET = %d %s", code, body)
		}
		if view.Execution != nil && view.Execution.State == "succeeded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ticket was never sent: %s\n%s\n%s", body, serve.Logs(), devLogs.String())
		}
	}
	providerURL := "http://" + provider
	if got := devWrites(t, providerURL, ticket.Key); len(got) != 1 || got[0].Signature != "valid" || got[0].Status != http.StatusCreated ||
		got[0].Path != "/tickets" || got[0].Replayed {
		t.Errorf("dev-provider got %+v; want the ticket once, validly signed", got)
	}

	// MCP lists a typed tool for each of init's tools.
	resp, body := mcpPost(t, serve.URL, token, "", mcpInitialize, nil)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("MCP initialize = %d %s", resp.StatusCode, body)
	}
	resp, body = mcpPost(t, serve.URL, token, session, `{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`, nil)
	for _, want := range []string{"request_write", "request_tickets_create", "request_payments_refund"} {
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"name":"`+want+`"`)) {
			t.Errorf("MCP tools/list = %d, lacks %s: %s", resp.StatusCode, want, body)
		}
	}

	// The agent-executed tool: the receipt dev-provider takes for the
	// approved body, and refuses for a changed one.
	refund := post(2, initAgentTool, `{"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"}`)
	approve(refund.Key)
	code, raw := call(http.MethodGet, "/v1/requests/"+refund.Key, "", agent)
	var view struct {
		Receipt string `json:"receipt"`
	}
	if code != http.StatusOK || json.Unmarshal(raw, &view) != nil || view.Receipt == "" {
		t.Fatalf("the approved refund carries no receipt: %d %s", code, raw)
	}
	withReceipt := map[string]string{"Countersign-Receipt": view.Receipt}
	if a := devPost(t, providerURL, "/refunds", refund.Key, []byte(`{"currency":"EUR","amount_cents":1250,"order":"ord_1001"}`), withReceipt); a.status != http.StatusCreated {
		t.Errorf("the approved refund with its receipt = %d %v", a.status, a.body)
	}
	if a := devPost(t, providerURL, "/refunds", refund.Key, []byte(`{"currency":"EUR","amount_cents":12500,"order":"ord_1001"}`), withReceipt); a.status != http.StatusForbidden || a.code() != "receipt_effect_mismatch" {
		t.Errorf("a changed refund with the receipt = %d %v; want 403 receipt_effect_mismatch", a.status, a.body)
	}
	if code, body := call(http.MethodPost, "/v1/requests/"+refund.Key+"/outcome", `{"status": "succeeded", "provider_ref": "dev_2"}`, agent); code != http.StatusOK {
		t.Errorf("reporting the outcome = %d %s", code, body)
	}
}
