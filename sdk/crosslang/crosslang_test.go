package crosslang

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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

const (
	token    = "sdk-crosslang-agent-token"
	tool     = "xl.payout"
	reviewer = "local:reviewer"
)

// config is serve's: one agent, and one agent-executed tool a local
// reviewer approves.
const config = `agents:
  - name: xl-agent
    token_sha256: %TOKEN_SHA256%
tools:
  xl.payout:
    approvers: [local:reviewer]
    description: Pay out to a vendor; the agent makes the write itself.
    execute: agent
    effect_schema:
      type: object
      required: [vendor, amount_cents]
      properties:
        vendor: {type: string}
        amount_cents: {type: integer, minimum: 1}
`

// A gated function of each SDK runs once, after approval, and its receipt
// is one the other SDK's verifier accepts for the write's body and
// refuses (effect) once one byte of the body changed; called again with
// the same run and step, the function is not. Real processes: countersign
// serve on the embedded store, countersign approve as its local reviewer,
// python3 and node as the agents and the verifiers. A missing python3,
// node or npm ci fails, as in the SDKs' own Go tests.
func TestGatedWritesVerifiedAcrossLanguages(t *testing.T) {
	python, node, tsc := tools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// tsc builds the TypeScript SDK, with its child, into a directory of
	// this test's (not the SDK's dist/, which its own test rebuilds) while
	// serve starts and Python's write goes ahead.
	out := t.TempDir()
	build := exec.CommandContext(ctx, tsc, "-p", filepath.Join("testdata", "tsconfig.json"), "--outDir", out)
	var buildOutput bytes.Buffer
	build.Stdout, build.Stderr = &buildOutput, &buildOutput
	if err := build.Start(); err != nil {
		t.Fatalf("tsc: %v", err)
	}
	built := false
	waitBuild := func(t *testing.T) {
		t.Helper()
		if built {
			return
		}
		if err := build.Wait(); err != nil {
			t.Fatalf("tsc -p testdata/tsconfig.json: %v\n%s", err, buildOutput.Bytes())
		}
		// The SDK's compiled sources are ES modules, as its package.json says.
		if err := os.WriteFile(filepath.Join(out, "package.json"), []byte(`{"type": "module"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		built = true
	}
	t.Cleanup(func() {
		if !built {
			cancel()
			_ = build.Wait()
		}
	})

	g := start(t)
	sdkPython, err := filepath.Abs(filepath.Join("..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	pythonEnv := append(os.Environ(), "PYTHONPATH="+sdkPython, "PYTHONDONTWRITEBYTECODE=1")

	langs := []struct {
		name string
		// child runs the gated write; verify the other language's verifier.
		child, verify func(args ...string) *exec.Cmd
		effect        string // the effect, whose amount_cents is 4200
		refPrefix     string // of the provider references the function returns
		childIsBuilt  bool   // the child is tsc's
	}{{
		name: "Python's gated function, TypeScript's verifier",
		child: func(args ...string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, python, append([]string{"-W", "error", filepath.Join("testdata", "gated_child.py")}, args...)...)
			cmd.Env = pythonEnv
			return cmd
		},
		verify: func(args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, node, append([]string{filepath.Join(out, "typescript", "src", "receipt-cli.js")}, args...)...)
		},
		effect:    `{"vendor": "v_12", "amount_cents": 4200}`,
		refPrefix: "payout_py_",
	}, {
		name: "TypeScript's gated function, Python's verifier",
		child: func(args ...string) *exec.Cmd {
			return exec.CommandContext(ctx, node, append([]string{filepath.Join(out, "crosslang", "testdata", "gated-child.mjs")}, args...)...)
		},
		verify: func(args ...string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, python, append([]string{"-W", "error", "-m", "countersign.receipt"}, args...)...)
			cmd.Env = pythonEnv
			return cmd
		},
		effect:       `{"amount_cents": 4200, "vendor": "v_34"}`,
		refPrefix:    "payout_ts_",
		childIsBuilt: true,
	}}
	for _, lang := range langs {
		t.Run(lang.name, func(t *testing.T) {
			dir := t.TempDir()
			calls, journal := filepath.Join(dir, "calls.jsonl"), filepath.Join(dir, "journal")
			run := "run-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			args := []string{g.url, token, tool, run, lang.effect, calls, journal}
			if lang.childIsBuilt {
				waitBuild(t)
			}

			// The child asks and waits; the reviewer approves once the
			// request is there.
			key, result := runChild(t, lang.child(args...), func(key string) {
				g.waitFor(t, key)
				g.approve(t, key)
			})
			wantRef := lang.refPrefix + "1"
			if !result.Called || result.State != "succeeded" || result.ProviderRef != wantRef {
				t.Fatalf("the gated call returned %+v, want called, succeeded, provider ref %s", result, wantRef)
			}
			call := onlyCall(t, calls)
			if call.Key != key {
				t.Fatalf("the function was called with key %q, the child asked with %q", call.Key, key)
			}
			sum := sha256.Sum256([]byte(call.Body))
			digest := hex.EncodeToString(sum[:])

			// countersign recorded the outcome the function returned, and
			// the receipt it was given is the request's.
			req := g.get(t, key)
			if req.Status != "approved" || !req.Settled || req.Execution == nil ||
				req.Execution.State != "succeeded" || req.Execution.ProviderRef != wantRef {
				t.Fatalf("the request is %+v (execution %+v), want approved, settled, succeeded with %s", req, req.Execution, wantRef)
			}
			if req.Receipt != call.Receipt {
				t.Fatalf("the function got receipt %q, the request carries %q", call.Receipt, req.Receipt)
			}
			if req.PayloadHash != "sha256:"+digest {
				t.Fatalf("the function wrote body %s (sha256 %s), the approved effect's hash is %s", call.Body, digest, req.PayloadHash)
			}

			// The other language's verifier takes the receipt for the body.
			waitBuild(t)
			body := filepath.Join(dir, "body.json")
			if err := os.WriteFile(body, []byte(call.Body), 0o644); err != nil {
				t.Fatal(err)
			}
			verifyArgs := func(body string) []string {
				return []string{"verify", "--jwks", g.jwks, "--key", key, "--tool", tool, "--body", body, call.Receipt}
			}
			stdout, stderr, code := runVerifier(t, lang.verify(verifyArgs(body)...))
			if code != 0 {
				t.Fatalf("the verifier refused the receipt (exit %d): %s%s", code, stderr, stdout)
			}
			var claims struct {
				Key, Tool, Agent string
				EffectSHA256     string `json:"effect_sha256"`
				DecidedBy        string `json:"decided_by"`
				Via              string
			}
			if err := json.Unmarshal(stdout, &claims); err != nil {
				t.Fatalf("the verifier's claims %q: %v", stdout, err)
			}
			if claims.Key != key || claims.Tool != tool || claims.Agent != "xl-agent" || claims.EffectSHA256 != digest ||
				claims.DecidedBy != reviewer || claims.Via != "human" {
				t.Fatalf("the verifier's claims are %+v, want key %s, tool %s, agent xl-agent, effect_sha256 %s, decided by %s, human",
					claims, key, tool, digest, reviewer)
			}

			// One digit of the amount changed: the same length, another effect.
			changed := strings.Replace(call.Body, "4200", "4201", 1)
			if changed == call.Body || len(changed) != len(call.Body) {
				t.Fatalf("the body %s has no amount 4200 to change", call.Body)
			}
			tampered := filepath.Join(dir, "tampered.json")
			if err := os.WriteFile(tampered, []byte(changed), 0o644); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, code = runVerifier(t, lang.verify(verifyArgs(tampered)...))
			if code != 1 || strings.TrimSpace(string(stderr)) != "effect" {
				t.Fatalf("the verifier on a changed body exited %d with stderr %q (stdout %q), want 1 and effect", code, stderr, stdout)
			}

			// Called again with the same run and step, the gated function
			// finds the outcome recorded and does not run.
			againKey, again := runChild(t, lang.child(args...), func(string) {})
			if againKey != key || again.Called || again.State != "succeeded" || again.ProviderRef != wantRef {
				t.Fatalf("called again, the child asked with key %s and returned %+v, want key %s, not called, succeeded with %s",
					againKey, again, key, wantRef)
			}
			if onlyCall(t, calls) != call {
				t.Fatal("the calls file changed")
			}
		})
	}
}

// tools returns python3 (3.10 or newer), node (18 or newer) and the
// TypeScript SDK's pinned tsc, or fails t.
func tools(t *testing.T) (python, node, tsc string) {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the cross-language test needs python3 (3.10 or newer): %v", err)
	}
	if out, err := exec.Command(python, "-c", "import sys; sys.exit(sys.version_info < (3, 10))").CombinedOutput(); err != nil {
		t.Fatalf("the Python SDK needs Python 3.10 or newer: %v %s", err, out)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		t.Fatalf("the cross-language test needs node (18 or newer): %v", err)
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	version := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.Split(version, ".")[0]); major < 18 {
		t.Fatalf("the TypeScript SDK needs Node 18 or newer, not %s", version)
	}
	tsc, err = filepath.Abs(filepath.Join("..", "typescript", "node_modules", ".bin", "tsc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tsc); err != nil {
		t.Fatalf("the cross-language test needs the TypeScript SDK's pinned tools: run scripts/test-deps (npm ci in sdk/typescript): %v", err)
	}
	return python, node, tsc
}

// gate is countersign serve on the embedded store, in a data directory of
// the test's.
type gate struct {
	url  string
	jwks string   // the file holding GET /.well-known/jwks.json's answer
	env  []string // the configuration and data directory, for countersign approve
}

func start(t *testing.T) *gate {
	t.Helper()
	dir := t.TempDir()
	sum := sha256.Sum256([]byte(token))
	path := filepath.Join(dir, "countersign.yml")
	if err := os.WriteFile(path, []byte(strings.Replace(config, "%TOKEN_SHA256%", hex.EncodeToString(sum[:]), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"COUNTERSIGN_CONFIG=" + path, "COUNTERSIGN_DATA_DIR=" + filepath.Join(dir, "data"), "COUNTERSIGN_DRAIN_DELAY=0s"}
	p := servetest.Start(t, env...)
	g := &gate{url: p.URL, jwks: filepath.Join(dir, "jwks.json"), env: env}

	resp, err := http.Get(g.url + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	jwks, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /.well-known/jwks.json: %d %s %v", resp.StatusCode, jwks, err)
	}
	if err := os.WriteFile(g.jwks, jwks, 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

// request is what the test reads of GET /v1/requests/{ref}.
type request struct {
	Status      string
	Settled     bool
	PayloadHash string `json:"payload_hash"`
	Receipt     string
	Execution   *struct {
		State       string
		ProviderRef string `json:"provider_ref"`
	}
}

// lookup answers GET /v1/requests/{key} as the agent: the request, or
// false when there is none (yet).
func (g *gate) lookup(t *testing.T, key string) (request, bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.url+"/v1/requests/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return request{}, false
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/requests/%s: %d %s", key, resp.StatusCode, raw)
	}
	var r request
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("GET /v1/requests/%s: %v: %s", key, err, raw)
	}
	return r, true
}

func (g *gate) get(t *testing.T, key string) request {
	t.Helper()
	r, ok := g.lookup(t, key)
	if !ok {
		t.Fatalf("no request %s", key)
	}
	return r
}

// waitFor returns once the request of key exists: the child prints the key
// just before it asks.
func (g *gate) waitFor(t *testing.T, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := g.lookup(t, key); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request %s within 20s", key)
		}
		time.Sleep(20 * time.Millisecond) // polling for the child's request, not waiting for an event
	}
}

// approve approves the request of key as the local reviewer, with
// countersign approve.
func (g *gate) approve(t *testing.T, key string) {
	t.Helper()
	cmd := exec.Command(servetest.Binary(t), "approve", key)
	cmd.Env = append(os.Environ(), g.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("countersign approve %s: %v\n%s", key, err, out)
	}
}

// result is the gated call's, as the child prints it.
type result struct {
	Called      bool
	State       string
	ProviderRef string `json:"provider_ref"`
}

// runChild runs a gated child to its end: asked is called with the key it
// prints before it asks. It returns the key and the call's result.
func runChild(t *testing.T, cmd *exec.Cmd, asked func(key string)) (string, result) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	next := func(what string, v any) {
		t.Helper()
		if !lines.Scan() {
			_ = cmd.Wait()
			t.Fatalf("%s printed no %s (%v):\n%s", cmd, what, lines.Err(), stderr.Bytes())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("%s printed %q for its %s: %v\n%s", cmd, lines.Bytes(), what, err, stderr.Bytes())
		}
	}
	var first struct{ Key string }
	next("key", &first)
	if !strings.HasPrefix(first.Key, "wa_") {
		t.Fatalf("%s printed key %q", cmd, first.Key)
	}
	asked(first.Key)
	var r result
	next("result", &r)
	if lines.Scan() {
		t.Fatalf("%s printed more: %q", cmd, lines.Bytes())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	return first.Key, r
}

// gatedCall is one line the gated function appended to the calls file.
type gatedCall struct {
	Key, Receipt, Body string
}

// onlyCall reads the calls file, and fails t unless it holds exactly one call.
func onlyCall(t *testing.T, path string) gatedCall {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the gated function was not called: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("the gated function was called %d times:\n%s", len(lines), raw)
	}
	var c gatedCall
	if err := json.Unmarshal([]byte(lines[0]), &c); err != nil {
		t.Fatalf("the calls file: %v: %s", err, raw)
	}
	return c
}

// runVerifier runs a receipt verifier CLI, and returns what it printed and
// its exit code.
func runVerifier(t *testing.T, cmd *exec.Cmd) (stdout, stderr []byte, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), errOut.Bytes(), 0
	case errors.As(err, &exit):
		return out.Bytes(), errOut.Bytes(), exit.ExitCode()
	default:
		t.Fatalf("%s: %v", cmd, err)
		return nil, nil, 0
	}
}
