package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

// BenchmarkFirstStartToReady measures a first local start: the built binary
// (build excluded), no configuration, an empty data directory, until /readyz
// answers 200. The embedded store is created and migrated on the way.
func BenchmarkFirstStartToReady(b *testing.B) {
	bin := servetest.Binary(b)
	var total time.Duration
	for b.Loop() {
		total += startToReady(b, bin)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-ready")
}

// startToReady starts bin on a fresh data directory, waits for /readyz and
// stops it; it returns the time from exec to the first 200.
func startToReady(b *testing.B, bin string) time.Duration {
	b.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "COUNTERSIGN_DATABASE_URL=", "COUNTERSIGN_CONFIG=",
		"COUNTERSIGN_DATA_DIR="+b.TempDir(), "COUNTERSIGN_LISTEN=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addr := ""
	lines := bufio.NewScanner(stderr)
	for addr == "" && lines.Scan() {
		addr, _ = listeningAddr(lines.Bytes())
	}
	if addr == "" {
		b.Fatal("serve exited without listening")
	}
	go func() { // keep draining so the process never blocks on a full pipe
		for lines.Scan() {
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
	}
	b.Fatal("never ready")
	return 0
}
