package servetest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binary is countersign, built at most once per test process.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
	// inMain is set by Main, which removes dir at the end.
	inMain bool
}

// Main is a TestMain that runs the package's tests and then removes the
// binary Binary built.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain that does more: it runs the tests, removes the
// binary and returns the exit code.
func Run(m *testing.M) int {
	binary.inMain = true
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	return code
}

// Binary returns the path of countersign built from this tree, building
// it on the first call. The package's TestMain must be Main, so the build
// does not outlive the tests (or call Run).
func Binary(t testing.TB) string {
	t.Helper()
	if !binary.inMain {
		t.Fatal("servetest.Binary needs the package's TestMain to be servetest.Main (or call servetest.Run)")
	}
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "countersign-servetest-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "countersign")
		// The package path builds from any directory of the module.
		out, err := exec.Command("go", "build", "-o", binary.path, "github.com/countersign/countersign/cmd/countersign").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatalf("building countersign: %v", binary.err)
	}
	return binary.path
}
