package typescript

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

// make sdk's npm tarball, packed into a scratch directory (npm pack, whose
// prepack compiles dist/ afresh), installed with npm --offline and an empty
// cache into a fresh project: the README's examples type-check against the
// installed declarations (@countersign/client/testing's too), and node
// imports the package from the project's node_modules: the version the
// VERSION file names, the README's client, the shared key vectors, and the
// README's example against a real serve built from this tree, approved with
// countersign approve and written once, and a gated function approved with
// the installed testing helpers. Nothing reaches the network: the package
// has no runtime dependency.
func TestTarballInstallsOffline(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the TypeScript SDK's packaging test needs node: %v", err)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("the TypeScript SDK's packaging test needs npm: %v", err)
	}
	tsc, err := filepath.Abs(filepath.Join("node_modules", ".bin", "tsc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("npm pack builds dist/ with the pinned tsc: run scripts/test-deps (npm ci in sdk/typescript): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	scratch := t.TempDir()
	serve := servetest.Binary(t)
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "COUNTERSIGN_BIN="+serve, "npm_config_offline=true", "npm_config_audit=false", "npm_config_fund=false",
			"npm_config_update_notifier=false", "npm_config_cache="+filepath.Join(scratch, "npm-cache"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	version := checkVersions(t)
	checkLicense(t, "LICENSE")

	dist := filepath.Join(scratch, "dist")
	if err := os.Mkdir(dist, 0o755); err != nil {
		t.Fatal(err)
	}
	run(".", npm, "pack", "--pack-destination", dist)
	tarball := filepath.Join(dist, "countersign-client-"+version+".tgz")
	files := tarballFiles(t, tarball)
	for _, want := range []string{"package/package.json", "package/LICENSE", "package/README.md",
		"package/dist/src/index.js", "package/dist/src/index.d.ts", "package/src/index.ts",
		"package/dist/src/testing.js", "package/dist/src/testing.d.ts", "package/dist/src/receipt-cli.js"} {
		if !files[want] {
			t.Errorf("%s lacks %s", filepath.Base(tarball), want)
		}
	}
	for name := range files {
		if strings.HasPrefix(name, "package/dist/test/") || strings.HasPrefix(name, "package/test/") {
			t.Errorf("%s carries a test file: %s", filepath.Base(tarball), name)
		}
	}

	project := filepath.Join(scratch, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(project, "package.json"), []byte(`{"name": "agent", "version": "1.0.0", "private": true, "type": "module"}`+"\n"))
	copyFile(t, filepath.Join("testdata", "readme-example.ts"), filepath.Join(project, "readme-example.ts"))
	copyFile(t, filepath.Join("testdata", "tsconfig.consumer.json"), filepath.Join(project, "tsconfig.json"))
	copyFile(t, filepath.Join("testdata", "installed.mjs"), filepath.Join(project, "installed.mjs"))
	run(project, npm, "install", "--offline", tarball)

	run(project, tsc, "-p", ".")
	vectors, err := filepath.Abs(filepath.Join("..", "..", "internal", "intentkey", "testdata", "key-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	helper, err := filepath.Abs(filepath.Join("dist", "test", "local-server.js")) // compiled by npm pack's prepack
	if err != nil {
		t.Fatal(err)
	}
	out := run(project, node, "installed.mjs", version, vectors, helper)
	if !strings.Contains(out, "README example: approved true") {
		t.Errorf("the README's example did not run:\n%s", out)
	}
	if !strings.Contains(out, "gated example: succeeded") {
		t.Errorf("the README's gated function did not run:\n%s", out)
	}
	t.Logf("%s", out)
}

// checkVersions fails unless package.json, package-lock.json and
// src/version.ts all say the VERSION file's version (without its v), and
// returns it. scripts/sdk-version writes them.
func checkVersions(t *testing.T) string {
	t.Helper()
	release, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimPrefix(strings.TrimSpace(string(release)), "v")
	for _, name := range []string{"package.json", "package-lock.json"} {
		var doc struct {
			Version  string `json:"version"`
			Private  bool   `json:"private"`
			Packages map[string]struct {
				Version string `json:"version"`
			} `json:"packages"`
		}
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(text, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc.Version != want {
			t.Errorf("%s says %s, the VERSION file %s: run scripts/sdk-version", name, doc.Version, want)
		}
		if root, ok := doc.Packages[""]; ok && root.Version != want {
			t.Errorf("%s's root package says %s, the VERSION file %s: run scripts/sdk-version", name, root.Version, want)
		}
		if doc.Private {
			t.Errorf("%s is private: npm would refuse to publish it", name)
		}
	}
	source, err := os.ReadFile(filepath.Join("src", "version.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if line := `export const VERSION = "` + want + `";`; !bytes.Contains(source, []byte(line)) {
		t.Errorf("src/version.ts lacks %s: run scripts/sdk-version", line)
	}
	return want
}

// tarballFiles lists the files of a gzipped tar.
func tarballFiles(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("npm pack did not write the expected tarball: %v", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	r := tar.NewReader(gz)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = true
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

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, data)
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
