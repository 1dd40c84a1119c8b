package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Against a local run the example needs no environment beyond where serve
// is: it finds the local agent's token in serve's data directory, lists the
// tools and asks for the write, then waits for a decision nobody makes here.
func TestTheExampleFindsTheLocalRunsToken(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "countersign")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/countersign").CombinedOutput(); err != nil {
		t.Fatalf("building countersign: %v\n%s", err, out)
	}
	data := t.TempDir()
	serve := exec.Command(bin, "serve")
	serve.Env = append(os.Environ(), "COUNTERSIGN_DATA_DIR="+data, "COUNTERSIGN_LISTEN=127.0.0.1:0",
		"COUNTERSIGN_LOG_FORMAT=json", "COUNTERSIGN_CONFIG=", "COUNTERSIGN_DATABASE_URL=")
	logs, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill(); _ = serve.Wait() })
	addr := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(logs)
		for scanner.Scan() {
			var line struct{ Msg, Addr string }
			if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
	}()
	select {
	case a := <-addr:
		t.Setenv("COUNTERSIGN_URL", "http://"+a)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen")
	}
	t.Setenv("COUNTERSIGN_DATA_DIR", data)
	t.Setenv("COUNTERSIGN_TOKEN", "")

	err = agent("demo.refund", "example-test-run", 2*time.Second)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("agent = %v, want it to wait for the decision until its deadline", err)
	}
	t.Setenv("COUNTERSIGN_DATA_DIR", t.TempDir())
	if err := agent("demo.refund", "example-test-run", time.Second); err == nil || err.Error()[:9] != "no token:" {
		t.Errorf("with no token anywhere: %v, want the sentence that says what to set", err)
	}
}
