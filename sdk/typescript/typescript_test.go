package typescript

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// The TypeScript SDK's tests: tsc --strict compiles it into dist/, then
// Node's test runner runs them against a countersign built from this tree:
// the key and signature vectors, the retries, and a real serve on the
// embedded store. A missing node or a missing npm ci (scripts/test-deps
// runs it) fails, as a missing database does.
func TestTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the TypeScript SDK's tests need node (18 or newer): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	version := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.Split(version, ".")[0]); major < 18 {
		t.Fatalf("the TypeScript SDK needs Node 18 or newer, not %s", version)
	}
	tsc := filepath.Join("node_modules", ".bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("the TypeScript SDK's tests need its pinned tools: run scripts/test-deps (npm ci in sdk/typescript): %v", err)
	}

	if err := os.RemoveAll("dist"); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, tsc, "-p", ".", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("tsc --strict: %v\n%s", err, out)
	}

	bin := servetest.Binary(t)

	tests, err := filepath.Glob(filepath.Join("dist", "test", "*.test.js"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no compiled tests in dist/test: %v", err)
	}
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-reporter=spec"}, tests...)...)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_BIN="+bin)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
