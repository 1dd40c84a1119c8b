package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runMCPScript runs one of tools/mcpclient's scripts (the TypeScript MCP
// SDK's client) with env and holds its conversation: answer is called with
// each line it prints and says whether the script waits for a reply (the
// test did what it asked). It returns the lines, failing the test if the
// script failed, its output and stderr and serve's logs (logs) named.
func runMCPScript(t *testing.T, script string, env map[string]string, logs func() string, answer func(line []byte) bool) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the MCP client's checks need Node.js (scripts/test-deps installs it): %v", err)
	}
	dir, _ := filepath.Abs("../../tools/mcpclient")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed (scripts/test-deps runs npm ci in tools/mcpclient): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUN_ID=run-"+strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	scanner := bufio.NewScanner(stdout)
	scanner.Buffer(nil, 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		lines = append(lines, string(line))
		if answer(line) {
			io.WriteString(stdin, "done\n")
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s\nserve:\n%s", script, err, strings.Join(lines, "\n"), stderr.String(), logs())
	}
	return lines
}
