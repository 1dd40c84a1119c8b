package importstest

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is the import path every package of countersign begins with.
const Module = "github.com/countersign/countersign"

// Floors of docs/ARCHITECTURE.md's layers, bottom up. A package may import
// a package of the module on a floor below its own, never one on its floor
// or above (Exceptions aside). The gaps leave room for a floor between two.
const (
	FloorLeaf    = 10 // the standard library's kind: intentkey, signature, identity, …
	FloorCore    = 20 // store, client
	FloorDriver  = 30 // store/postgres, store/embedded
	FloorService = 40 // approvals, executor, lookup, callback, sandbox
	FloorSurface = 50 // hook, bot, inbox, mcpserver
	FloorConfig  = 60 // config: reads the file into every part's settings
	FloorCommand = 70 // cmd/…, examples/agent: wire everything
	// helper is how far above what it helps a test helper sits.
	helper = 5
)

// floors places each package of the module, by its path inside it. A new
// package gets its line here (and in docs/ARCHITECTURE.md), or
// TestEveryPackageHasAFloor fails.
var floors = map[string]int{
	"identity":            FloorLeaf,
	"wire":                FloorLeaf,
	"executor/sender":     FloorLeaf,
	"internal/intentkey":  FloorLeaf,
	"internal/signature":  FloorLeaf,
	"internal/strictjson": FloorLeaf,
	"internal/outbound":   FloorLeaf,
	"internal/startstop":  FloorLeaf,
	"internal/namedsql":   FloorLeaf,
	"internal/requestid":  FloorLeaf,
	"internal/mutant":     FloorLeaf,
	"internal/misleading": FloorLeaf,
	"migrations":          FloorLeaf,
	"receipt":             FloorLeaf + 1, // a provider's verifier: intentkey's canonical form, nothing of the service

	"store":    FloorCore,
	"delivery": FloorCore, // the one claim/lease/retry/pace worker: plumbing, no domain
	"client":   FloorCore,

	"store/postgres": FloorDriver,
	"store/embedded": FloorDriver,

	"executor/httpsender": FloorDriver, // the HTTP sender: the port and the signing leaves
	"gateway":             FloorDriver, // the MCP sender and upstream sessions: the port and the MCP SDK

	"approvals":  FloorService,
	"executor":   FloorService,
	"lookup":     FloorService,
	"callback":   FloorService,
	"sandbox":    FloorService,
	"surface":    FloorService + 2, // the review-surface port: it renders what approvals decided
	"reviewpage": FloorService + 2, // what the review pages (inbox, console) render alike

	"hook":         FloorSurface,
	"bot":          FloorSurface,
	"emailsurface": FloorSurface,
	"teamssurface": FloorSurface,
	"inbox":        FloorSurface,
	"console":      FloorSurface, // the review console behind OpenID Connect
	"mcpserver":    FloorSurface,

	// the preview endpoints' HTTP client, beside the surfaces
	"surface/previewhttp": FloorSurface,

	"config": FloorConfig,

	"cmd/countersign":         FloorCommand,
	"cmd/fakeprovider":        FloorCommand,
	"cmd/intakebench":         FloorCommand,
	"cmd/execbench":           FloorCommand,
	"cmd/waitbench":           FloorCommand,
	"cmd/chaos":               FloorCommand,
	"examples/agent":          FloorCommand,
	"cmd/internal/benchserve": FloorConfig + helper, // below the benchmarks that share it

	// Test helpers sit just above what they help; only tests (and the
	// commands) import them.
	"internal/importstest":             FloorLeaf,
	"internal/browsertest":             FloorLeaf,
	"internal/intentkey/intentkeytest": FloorLeaf,
	"hook/apitest":                     FloorLeaf,
	"bot/fakeslack":                    FloorLeaf, // a fake Slack for tests and the chaos run
	"bot/bottest":                      FloorLeaf + helper,
	"internal/servetest":               FloorLeaf,
	"store/storetest":                  FloorDriver + helper,
	"store/drivertest":                 FloorDriver + helper + 1,
	"approvals/approvalstest":          FloorService + helper,
	"executor/providertest":            FloorService + helper,
	"surface/surfacetest":              FloorService + 2 + helper,
	"surface/onedecision":              FloorSurface + helper, // tests only: every surface on one decision
	"sdk/python":                       FloorLeaf,
	"sdk/typescript":                   FloorLeaf,
	"sdk/crosslang":                    FloorLeaf,
}

// exceptions are the imports the floors allow across one floor, each with
// why: the inbox answers a refusal with hook.Status, so that a code's HTTP
// status is written once.
var exceptions = map[[2]string]bool{
	{"inbox", "hook"}: true,
}

// Floor returns the floor of the package at path inside the module.
func Floor(path string) (int, bool) {
	f, ok := floors[path]
	return f, ok
}

// HoldsFloor fails t for each import of the package in dir (its path
// inside the module is pkg), tests aside, that names a package of the
// module on pkg's floor or above, or on no floor at all.
func HoldsFloor(t *testing.T, dir, pkg string) {
	t.Helper()
	own, ok := floors[pkg]
	if !ok {
		t.Fatalf("%s has no floor: give it one in internal/importstest/floors.go and docs/ARCHITECTURE.md", pkg)
	}
	for _, imp := range In(t, dir) {
		if imp.Test || !Under(imp.Path, Module) {
			continue
		}
		dep := strings.TrimPrefix(imp.Path, Module+"/")
		floor, ok := floors[dep]
		switch {
		case !ok:
			t.Errorf("%s imports %s, which has no floor", imp.File, imp.Path)
		case floor >= own && !exceptions[[2]string{pkg, dep}]:
			t.Errorf("%s imports %s: %s (floor %d) may import only packages below its floor, and %s is on floor %d",
				imp.File, imp.Path, pkg, own, dep, floor)
		}
	}
}

// Packages lists every package of the module, by its path inside it.
func Packages(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", Module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p == Module {
			continue
		}
		pkgs = append(pkgs, strings.TrimPrefix(p, Module+"/"))
	}
	return pkgs
}

// Placed lists the packages floors places, by their path inside the module.
func Placed() []string {
	var pkgs []string
	for p := range floors {
		pkgs = append(pkgs, p)
	}
	return pkgs
}
