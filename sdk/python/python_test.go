package python

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

func TestMain(m *testing.M) { servetest.Main(m) }

// The Python SDK's tests, warnings as errors, against a countersign built
// from this tree: the key and signature vectors, the retries, and a real
// serve on the embedded store. A missing python3 fails, as a missing
// database does.
func TestPythonSDK(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the Python SDK's tests need python3 (3.10 or newer): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, python, "-c", "import sys; sys.exit(sys.version_info < (3, 10))").CombinedOutput(); err != nil {
		t.Fatalf("the Python SDK needs Python 3.10 or newer: %v %s", err, out)
	}

	bin := servetest.Binary(t)

	cmd := exec.CommandContext(ctx, python, "-W", "error", "-m", "unittest", "discover", "-v")
	cmd.Env = append(os.Environ(), "COUNTERSIGN_BIN="+bin, "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -W error -m unittest discover: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
