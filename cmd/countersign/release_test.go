package main

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReleaseBinary builds this machine's release binary as make release
// does, checks its checksum line and its stamped version, and runs serve on
// the embedded store with nothing in its environment but a data directory
// and a listen address: no PATH, no HOME, no configuration.
func TestReleaseBinary(t *testing.T) {
	t.Parallel()
	const version = "v0.0.0-releasetest"
	out := t.TempDir()
	build := exec.Command("scripts/release", out)
	build.Env = append(os.Environ(), "VERSION="+version, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	build.Dir = "../.." // the repository, as make release runs it
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, msg)
	}
	name := "countersign-" + version + "-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(out, name)
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q", sums, want)
	}
	if runtime.GOOS == "linux" {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the release binary has a dynamic loader: it is not static")
			}
		}
		f.Close()
	}

	printed, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(printed)); got != "countersign "+version {
		t.Errorf("countersign version printed %q, want the stamped %q", got, version)
	}

	serve := exec.Command(bin, "serve")
	serve.Env = []string{"COUNTERSIGN_DATA_DIR=" + t.TempDir(), "COUNTERSIGN_LISTEN=127.0.0.1:0", "COUNTERSIGN_LOG_FORMAT=json"}
	logs, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	serve.Stdout = serve.Stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = serve.Process.Kill() })
	addr := make(chan string, 1)
	var seen strings.Builder
	go func() {
		scanner := bufio.NewScanner(logs)
		for scanner.Scan() {
			seen.WriteString(scanner.Text() + "\n")
			var line struct{ Msg, Addr string }
			if json.Unmarshal(scanner.Bytes(), &line) == nil && line.Msg == "listening" {
				addr <- line.Addr
			}
		}
		close(addr)
	}()
	var base string
	select {
	case a, ok := <-addr:
		if !ok {
			_ = serve.Wait()
			t.Fatalf("serve exited before listening:\n%s", seen.String())
		}
		base = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not listen within 30 s")
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz answered %d", resp.StatusCode)
	}
	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := serve.Wait(); err != nil {
		t.Errorf("serve exited with %v after SIGTERM", err)
	}
}

// Without VERSION in the environment, a release is stamped with the VERSION
// file's version, exactly, as the image is: tags do not travel with every
// copy of the repository, the file does. The README builds from a
// checkout, never from a module path that is not published.
func TestReleaseVersionIsTheVersionFiles(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`).MatchString(version) {
		t.Fatalf("VERSION holds %q, not a version like v1.2.3 or v1.3.0-dev", raw)
	}
	out := t.TempDir()
	build := exec.Command("scripts/release", out)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VERSION=") {
			build.Env = append(build.Env, kv)
		}
	}
	build.Env = append(build.Env, "PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
	build.Dir = "../.."
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, msg)
	}
	printed, err := exec.Command(filepath.Join(out, "countersign-"+version+"-"+runtime.GOOS+"-"+runtime.GOARCH), "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(printed)); got != "countersign "+version {
		t.Errorf("countersign version printed %q, want %q", got, "countersign "+version)
	}

	docker, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docker), "version=${VERSION:-$(tr -d '[:space:]' <VERSION)}") {
		t.Error("the Dockerfile does not stamp the VERSION file's version by default")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, stale := range []string{"@latest", "git describe"} {
		if strings.Contains(string(readme), stale) {
			t.Errorf("the README still says %q", stale)
		}
	}
}
