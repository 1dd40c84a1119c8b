package python

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

// make sdk's Python files, built into a scratch directory by build_dist.py
// (standard library only), each installed with pip --no-index into a fresh
// virtual environment and imported from there, outside the source tree:
// the version the VERSION file names, the README's clients, the shared key
// vectors; from the wheel, the README's example against a real serve built
// from this tree, approved in its inbox and written once. Nothing reaches
// the network: no index, no build dependency.
func TestWheelAndSdistInstallOffline(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the Python SDK's packaging test needs python3: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	serveBin := servetest.Binary(t)
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COUNTERSIGN_BIN="+serveBin, "PYTHONDONTWRITEBYTECODE=1", "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PYTHONPATH=", "PYTHONNOUSERSITE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(run(here, python, "-c", "import build_dist; print(build_dist.pep440(open('../../VERSION').read()))"))
	checkLicense(t, "LICENSE")

	scratch := t.TempDir()
	dist := filepath.Join(scratch, "dist")
	run(here, python, "build_dist.py", dist)
	wheel := filepath.Join(dist, "countersign-"+version+"-py3-none-any.whl")
	sdist := filepath.Join(dist, "countersign-"+version+".tar.gz")
	entries, _ := os.ReadDir(dist)
	if len(entries) != 2 {
		t.Fatalf("build_dist.py wrote %d files, want the wheel and the sdist: %v", len(entries), entries)
	}

	// The same tree builds the same bytes, so a release can be rebuilt and checked.
	again := filepath.Join(scratch, "again")
	run(here, python, "build_dist.py", again)
	for _, name := range []string{filepath.Base(wheel), filepath.Base(sdist)} {
		a, errA := os.ReadFile(filepath.Join(dist, name))
		b, errB := os.ReadFile(filepath.Join(again, name))
		if errA != nil || errB != nil {
			t.Fatalf("%s: %v %v", name, errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of the same tree", name)
		}
	}

	vectors, err := filepath.Abs(filepath.Join("..", "..", "internal", "intentkey", "testdata", "key-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	check, err := filepath.Abs(filepath.Join("testdata", "installed.py"))
	if err != nil {
		t.Fatal(err)
	}
	for name, file := range map[string]string{"wheel": wheel, "sdist": sdist} {
		t.Run(name, func(t *testing.T) {
			venv := filepath.Join(scratch, "venv-"+name)
			run(scratch, python, "-m", "venv", venv)
			bin := filepath.Join(venv, "bin")
			run(scratch, filepath.Join(bin, "pip"), "install", "--no-index", "--no-cache-dir", file)
			args := []string{check, version, vectors}
			if name == "wheel" {
				args = append(args, here)
			}
			out := run(scratch, filepath.Join(bin, "python"), args...)
			if name == "wheel" && !strings.Contains(out, "README example: approved True") {
				t.Errorf("the README's example did not run:\n%s", out)
			}
			t.Logf("%s", out)
		})
	}
}

// checkLicense fails unless the package's copy of the license is the
// repository's LICENSE, byte for byte.
func checkLicense(t *testing.T, copy string) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join("..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(copy)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the repository's LICENSE: copy it again", copy)
	}
}
