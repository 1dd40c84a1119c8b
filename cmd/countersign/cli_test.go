package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCommand runs `countersign args…` with a data directory of its own and
// returns its exit code and output.
func runCommand(t *testing.T, stdin string, args ...string) (code int, stdout, stderr, dataDir string) {
	t.Helper()
	dataDir = t.TempDir()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, envFrom(map[string]string{"COUNTERSIGN_DATA_DIR": dataDir}),
		strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String(), dataDir
}

func TestEveryCommandTakesHelpAndDoesNothingElse(t *testing.T) {
	t.Parallel()
	for cmd, usage := range map[string]string{
		"serve":   "usage: countersign serve",
		"migrate": "usage: countersign migrate",
		"key":     "usage: countersign key [FILE]",
		"version": "usage: countersign version",
		"mcp":     "usage: countersign mcp",
		"policy":  "usage: countersign policy test FILE CASES",
		"approve": "usage: countersign approve [--as local:NAME] REF",
		"reject":  "usage: countersign reject [--as local:NAME] [--reason TEXT] REF",
	} {
		for _, help := range []string{"--help", "-h"} {
			// serve would block until cancelled, and both serve and migrate
			// would create the embedded store in the data directory.
			code, stdout, stderr, dir := runCommand(t, "", cmd, help)
			if code != 0 || !strings.HasPrefix(stdout, usage) || stderr != "" {
				t.Errorf("%s %s: exit %d\nstdout: %s\nstderr: %s", cmd, help, code, stdout, stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%s %s wrote %d files into the data directory", cmd, help, len(entries))
			}
		}
	}
}

func TestUnknownFlagsAndArgumentsExitTwo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"serve", "--port", "1"},
		{"serve", "now"},
		{"migrate", "up"},
		{"key", "a.json", "b.json"},
		{"key", "--tool", "x"},
		{"version", "--short"},
		{"mcp", "--call-timeout", "0s"},
		{"mcp", "stdio"},
		{"policy", "check", "a.yml", "b.yml"},
		{"policy", "test", "a.yml", "b.yml", "c.yml"},
		{"approve"},
		{"approve", "--reason", "why", "wa_0123456789ab"},
		{"reject", "wa_0123456789ab", "wa_0123456789cd"},
		{"frobnicate"},
		{},
	} {
		code, stdout, stderr, dir := runCommand(t, "", args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "usage: countersign") {
			t.Errorf("%q: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%q wrote %d files into the data directory", args, len(entries))
		}
	}
}

func TestVersionPrintsTheVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr, _ := runCommand(t, "", args...)
		if code != 0 || stdout != "countersign "+versionString()+"\n" || stderr != "" {
			t.Errorf("%q: exit %d\nstdout: %q\nstderr: %s", args, code, stdout, stderr)
		}
	}
}

func TestKeyCommandReadsAFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intent.json")
	intent := `{"run_id": "r-7f3a", "step": 6, "tool": "billing.credit",
		"effect": {"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"}}`
	if err := os.WriteFile(path, []byte(intent), 0o600); err != nil {
		t.Fatal(err)
	}
	// Stdin holds another intent: the file must win.
	code, stdout, stderr, _ := runCommand(t, `{"run_id": "other", "step": 1, "tool": "t", "effect": {}}`, "key", path)
	if code != 0 || stdout != "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c\n" {
		t.Errorf("key FILE: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, stderr, _ = runCommand(t, intent, "key", "-")
	if code != 0 || !strings.HasPrefix(stdout, "wa_d0290121a1bc") {
		t.Errorf("key -: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, stderr, _ = runCommand(t, intent, "key", filepath.Join(t.TempDir(), "missing.json"))
	if code != 1 || stdout != "" || !strings.Contains(stderr, "missing.json") {
		t.Errorf("key of a missing file: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
