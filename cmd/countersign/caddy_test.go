package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Caddy site in deploy/caddy passes the agent API, Slack's endpoints and
// MCP to serve and nothing else: metrics, probes and the inbox answer 404 from
// outside. It runs here over plain HTTP on loopback, the site's name and the
// upstream swapped for the test's; TLS is Caddy's own business.
func TestCaddySitePassesOnlyThePublicPaths(t *testing.T) {
	t.Parallel()
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		t.Fatalf("checking deploy/caddy needs caddy (Debian's caddy package; scripts/test-deps installs it): %v", err)
	}
	site, err := os.ReadFile("../../deploy/caddy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, err := exec.Command(caddy, "adapt", "--config", "../../deploy/caddy/Caddyfile", "--adapter", "caddyfile").CombinedOutput(); err != nil {
		t.Fatalf("caddy adapt deploy/caddy/Caddyfile: %v\n%s", err, out)
	}

	base, _ := startServe(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	ln.Close()
	local := strings.Replace(string(site), "countersign.example.com {", "http://"+front+" {", 1)
	local = strings.ReplaceAll(local, "reverse_proxy 127.0.0.1:8080", "reverse_proxy "+strings.TrimPrefix(base, "http://"))
	local = "{\n\tadmin off\n\tauto_https off\n}\n" + local
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	get := func(method, path, token string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+front+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		if code, _ := get(http.MethodGet, "/v1/tools", smokeToken); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy never passed /v1/tools to serve:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling until caddy listens
	}
	// Passed through: serve answers (its token check; its own 404 for Slack,
	// which this serve has not configured). Kept out: Caddy's empty 404.
	if code, body := get(http.MethodGet, "/v1/tools", ""); code != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) {
		t.Errorf("GET /v1/tools without a token through caddy = %d %q, want serve's 401", code, body)
	}
	if code, body := get(http.MethodPost, "/mcp", ""); code != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) {
		t.Errorf("POST /mcp without a token through caddy = %d %q, want serve's 401", code, body)
	}
	if code, body := get(http.MethodPost, "/slack/interactions", ""); code != http.StatusNotFound || body != "404 page not found\n" {
		t.Errorf("POST /slack/interactions through caddy = %d %q, want serve's own answer", code, body)
	}
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/inbox/", "/"} {
		if code, body := get(http.MethodGet, path, ""); code != http.StatusNotFound || body != "" {
			t.Errorf("GET %s through caddy = %d %q, want caddy's empty 404: it must not reach serve", path, code, body)
		}
	}
}
