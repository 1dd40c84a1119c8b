package hook

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// toolsDir holds the npm tools the document is checked with, pinned by its
// package-lock.json; scripts/test-deps installs them (npm ci).
const toolsDir = "../tools/openapi"

// npx runs a tool of toolsDir's node_modules, failing the test (never
// skipping it) when the tools are not installed.
func npx(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	bin := filepath.Join(toolsDir, "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed: run scripts/test-deps (npm ci in tools/openapi)", name)
	}
	cmd := exec.Command(filepath.Join("node_modules", ".bin", name), args...)
	cmd.Dir = toolsDir
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Redocly's recommended rules find nothing in the document: no error, no
// warning.
func TestOpenAPIDocumentLintsClean(t *testing.T) {
	t.Parallel()
	out, err := npx(t, "redocly", "lint", "--extends=recommended", "--format=stylish", "../../hook/openapi.json")
	problems := regexp.MustCompile(`(?m)^\s+\d+:\d+\s+(error|warning)\s`).FindAllString(out, -1)
	if err != nil || len(problems) > 0 || !regexp.MustCompile(`Your API description is valid`).MatchString(out) {
		t.Fatalf("redocly lint: %v, %d problems:\n%s", err, len(problems), out)
	}
}

// TypeScript types generated from the document with openapi-typescript are
// usable: a small agent (tools/openapi/check.ts) that writes an effect,
// reads an effect_schema and a tier, and explains an error compiles with
// tsc --strict. Free-form objects typed Record<string, never> would not.
func TestOpenAPITypeScriptTypesCompile(t *testing.T) {
	t.Parallel()
	if out, err := npx(t, "openapi-typescript", "../../hook/openapi.json", "-o", "generated/api.d.ts"); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	if out, err := npx(t, "tsc", "-p", "."); err != nil {
		t.Fatalf("tsc against the generated types: %v\n%s", err, out)
	}
}
