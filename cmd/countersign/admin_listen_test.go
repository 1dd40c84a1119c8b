package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store/storetest"
)

// With COUNTERSIGN_ADMIN_LISTEN the health checks and metrics move to a
// listener of their own: the public one, which agents and Slack reach,
// serves /v1/ and no longer /metrics or the probes.
func TestAdminListenerServesOpsAlone(t *testing.T) {
	t.Parallel()
	cfgPath := smokeConfig(t)
	base, logs := startServeWith(t, envFrom(map[string]string{
		"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
		"COUNTERSIGN_CONFIG":          cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
		"COUNTERSIGN_ADMIN_LISTEN":    "127.0.0.1:0",
	}))
	admin := ""
	for _, line := range strings.Split(logs.String(), "\n") {
		var entry struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "admin listening" {
			admin = "http://" + entry.Addr
		}
	}
	if admin == "" || admin == base {
		t.Fatalf("no admin listener of its own (public %s, admin %q): %s", base, admin, logs.String())
	}

	status := func(url string, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code, _ := status(admin+path, ""); code != http.StatusOK {
			t.Errorf("admin %s = %d, want 200", path, code)
		}
		if code, _ := status(base+path, ""); code != http.StatusNotFound {
			t.Errorf("public %s = %d, want 404: it moved to the admin listener", path, code)
		}
	}
	if _, body := status(admin+"/metrics", ""); !strings.Contains(body, "go_goroutines") {
		t.Error("the admin /metrics has no Go runtime metrics")
	}
	if code, _ := status(base+"/v1/tools", smokeToken); code != http.StatusOK {
		t.Errorf("public /v1/tools = %d, want 200", code)
	}
	if code, _ := status(admin+"/v1/tools", smokeToken); code != http.StatusNotFound {
		t.Errorf("admin /v1/tools = %d, want 404: the agent API is not on the admin listener", code)
	}
}

// A taken admin address fails start, naming the setting to change.
func TestAdminListenTakenNamesTheSetting(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfgPath := smokeConfig(t)
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"serve"}, envFrom(map[string]string{
			"COUNTERSIGN_DATABASE_URL":    storetest.NewURL(t),
			"COUNTERSIGN_CONFIG":          cfgPath,
			"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
			"COUNTERSIGN_LISTEN":          "127.0.0.1:0",
			"COUNTERSIGN_ADMIN_LISTEN":    taken.Addr().String(),
		}), nil, io.Discard, &stderr)
	}()
	select {
	case code := <-done:
		if code == 0 || !strings.Contains(stderr.String(), "COUNTERSIGN_ADMIN_LISTEN") {
			t.Errorf("serve exited %d with %q, want a failure naming COUNTERSIGN_ADMIN_LISTEN", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve started on a taken admin address")
	}
}
