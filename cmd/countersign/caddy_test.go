package main

import (
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
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
	if out, err := exec.Command(caddy, "adapt", "--config", "../../deploy/caddy/Caddyfile", "--adapter", "caddyfile").CombinedOutput(); err != nil {
		t.Fatalf("caddy adapt deploy/caddy/Caddyfile: %v\n%s", err, out)
	}

	base, _ := startServe(t)
	upstream := strings.TrimPrefix(base, "http://")
	_, port, _ := net.SplitHostPort(upstream)
	front := strings.TrimPrefix(startCaddySite(t, caddy, func(site string) string {
		// This serve has no admin listener: /readyz is on its one port.
		site = strings.ReplaceAll(site, "reverse_proxy 127.0.0.1:8080", "reverse_proxy "+upstream)
		return strings.ReplaceAll(site, "health_port 9090", "health_port "+port)
	}), "http://")

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
