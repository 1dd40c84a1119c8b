package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store/storetest"
)

// A rolling restart behind the shipped Caddy site loses no request: two
// serve processes on one PostgreSQL, each on a loopback address of its own,
// behind deploy/caddy/Caddyfile as shipped (its health checks on /readyz at
// the admin port), under a steady load of agents posting intents, reading
// them and long-polling them through Caddy. Each replica in turn gets
// SIGTERM, exits, and is started again; the next is restarted once Caddy
// sends the first one requests again. Every answer the agents get is
// counted: not one 5xx, not one connection error.
func TestRollingRestartBehindCaddyLosesNoRequest(t *testing.T) {
	t.Parallel()
	caddy, err := exec.LookPath("caddy")
	if err != nil {
		t.Fatalf("the rolling restart needs caddy (Debian's caddy package; scripts/test-deps installs it): %v", err)
	}
	hosts := []string{"127.0.0.2", "127.0.0.3"}
	port, admin := freePortOn(t, hosts), freePortOn(t, hosts)
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:])))
	dbURL := storetest.NewURL(t)
	envOf := func(host string) map[string]string {
		return map[string]string{
			"COUNTERSIGN_CONFIG": cfg, "COUNTERSIGN_DATABASE_URL": dbURL, "COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
			"COUNTERSIGN_LISTEN":       net.JoinHostPort(host, strconv.Itoa(port)),
			"COUNTERSIGN_ADMIN_LISTEN": net.JoinHostPort(host, strconv.Itoa(admin)),
			"COUNTERSIGN_INBOX":        "off",
			"COUNTERSIGN_DRAIN_DELAY":  "", // the default, as deployed
		}
	}
	replicas := make([]*serveProcess, len(hosts))
	for i, host := range hosts {
		replicas[i] = startServeProcess(t, envOf(host))
	}

	front := startCaddySite(t, caddy, func(site string) string {
		upstreams := make([]string, len(hosts))
		for i, host := range hosts {
			upstreams[i] = net.JoinHostPort(host, strconv.Itoa(port))
		}
		site = strings.ReplaceAll(site, "reverse_proxy 127.0.0.1:8080", "reverse_proxy "+strings.Join(upstreams, " "))
		return strings.ReplaceAll(site, "health_port 9090", "health_port "+strconv.Itoa(admin))
	})

	load := startAgentLoad(t, front, 4)
	// Both replicas take requests before the first restart.
	for i, host := range hosts {
		waitForAgentRequests(t, host, admin, replicas[i])
	}
	for i, host := range hosts {
		began := time.Now()
		if err := replicas[i].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitExited(t, replicas[i])
		if took := time.Since(began); took < config.DefaultDrainDelay {
			t.Errorf("replica %s exited %v after SIGTERM, before its drain delay of %v", host, took.Round(time.Millisecond), config.DefaultDrainDelay)
		}
		// The same address again, as a restarted pod or unit: Caddy's
		// health check finds it, and the next replica waits for that.
		replicas[i] = startServeProcess(t, envOf(host))
		waitForAgentRequests(t, host, admin, replicas[i])
	}
	got := load.stop()

	t.Logf("%d agent requests through caddy during the rolling restart: %v", got.total, got.statuses)
	if got.total < 200 {
		t.Errorf("only %d requests were answered: the load was not steady", got.total)
	}
	for _, e := range got.errors {
		t.Errorf("an agent request failed: %s", e)
	}
}

// freePortOn returns a TCP port free on every one of hosts, for replicas
// that each listen on a host of their own at the same port.
func freePortOn(t *testing.T, hosts []string) int {
	t.Helper()
	for range 50 {
		ln, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		free := true
		for _, h := range hosts[1:] {
			other, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				free = false
				break
			}
			other.Close()
		}
		ln.Close()
		if free {
			return port
		}
	}
	t.Fatal("no port free on every replica's address")
	return 0
}

// startCaddySite runs deploy/caddy/Caddyfile over plain HTTP on a loopback
// port, its site name replaced and edit applied (the upstreams), and
// returns its base URL once it listens.
func startCaddySite(t *testing.T, caddy string, edit func(site string) string) string {
	t.Helper()
	site, err := os.ReadFile("../../deploy/caddy/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	local := strings.Replace(string(site), "countersign.example.com {", "http://"+front+" {", 1)
	local = "{\n\tadmin off\n\tauto_https off\n}\n" + edit(local)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(caddy, "run", "--config", path, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + front
	for deadline := time.Now().Add(20 * time.Second); ; {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/tools", nil)
		req.Header.Set("Authorization", "Bearer "+smokeToken)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy never passed /v1/tools to serve:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling until caddy listens
	}
}

// waitForAgentRequests waits until the replica on host has answered agent
// requests, as its admin listener's metrics count them: Caddy sends it
// traffic.
func waitForAgentRequests(t *testing.T, host string, admin int, p *serveProcess) {
	t.Helper()
	metrics := "http://" + net.JoinHostPort(host, strconv.Itoa(admin)) + "/metrics"
	for deadline := time.Now().Add(30 * time.Second); agentRequests(metrics) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("caddy sent the replica on %s no request:\n%s", host, p.logs.String())
		}
		time.Sleep(50 * time.Millisecond) // polling the replica's metrics
	}
}

// agentRequests sums countersign_agent_token_requests_total at metrics.
func agentRequests(metrics string) float64 {
	resp, err := http.Get(metrics)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	total := 0.0
	scanner := bufio.NewScanner(resp.Body)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, "countersign_agent_token_requests_total{") {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += v
		}
	}
	return total
}

// waitExited waits for a signalled serve process to exit, cleanly.
func waitExited(t *testing.T, p *serveProcess) {
	t.Helper()
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v:\n%s", err, p.logs.String())
		}
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Fatalf("serve did not stop on SIGTERM:\n%s", p.logs.String())
	}
}

// agentLoad is agents working through base until stop: each posts an
// intent and reads it, and every fourth one long-polls it for a second.
type agentLoad struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	result loadResult
}

type loadResult struct {
	total    int
	statuses map[int]int
	errors   []string
}

func startAgentLoad(t *testing.T, base string, agents int) *agentLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &agentLoad{cancel: cancel, result: loadResult{statuses: map[int]int{}}}
	client := &http.Client{Timeout: 30 * time.Second}
	for a := range agents {
		l.wg.Go(func() {
			pace := time.NewTicker(20 * time.Millisecond) // a steady rate, not a storm
			defer pace.Stop()
			for n := 0; ctx.Err() == nil; n++ {
				body := fmt.Sprintf(`{"run_id":"roll-%d-%d","step":1,"tool":"billing.credit","effect":{"invoice":"inv_%d","amount_cents":%d,"currency":"EUR"},"summary":"Credit"}`,
					a, n, n, 100+n)
				status, created := l.do(ctx, client, http.MethodPost, base+"/v1/requests", body)
				if status == http.StatusCreated {
					var ref struct {
						ID string `json:"id"`
					}
					if json.Unmarshal(created, &ref) == nil && ref.ID != "" {
						l.do(ctx, client, http.MethodGet, base+"/v1/requests/"+ref.ID, "")
						if n%4 == 0 {
							l.do(ctx, client, http.MethodGet, base+"/v1/requests/"+ref.ID+"?wait=1s", "")
						}
					}
				}
				select {
				case <-ctx.Done():
				case <-pace.C:
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); l.wg.Wait() })
	return l
}

// do sends one request and counts its answer; a request cut short by stop
// is not counted.
func (l *agentLoad) do(ctx context.Context, client *http.Client, method, url, body string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+smokeToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if ctx.Err() != nil {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.result.errors = append(l.result.errors, fmt.Sprintf("%s %s: %v", method, url, err))
		return 0, nil
	}
	l.result.total++
	l.result.statuses[resp.StatusCode]++
	if resp.StatusCode >= 500 {
		l.result.errors = append(l.result.errors, fmt.Sprintf("%s %s: %d %s", method, url, resp.StatusCode, answer))
	}
	return resp.StatusCode, answer
}

// stop ends the load, waits for the agents and returns what they got.
func (l *agentLoad) stop() loadResult {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.result
}
