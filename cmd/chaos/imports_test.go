package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The package holds its floor in docs/ARCHITECTURE.md's layers: it imports
// only packages of countersign on a floor below its own
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "cmd/chaos")
}

// The chaos program is a program, not a test: it depends on no test
// helper (a package named …test) and not on package testing, so what it
// needs of a fake Slack or a scratch database lives in packages that
// programs may use (bot/fakeslack, cmd/internal/benchserve).
func TestChaosImportsNoTestHelper(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	sawFake := false
	for _, dep := range deps {
		last := dep[strings.LastIndex(dep, "/")+1:]
		switch {
		case dep == "github.com/countersign/countersign/bot/fakeslack":
			sawFake = true
		case dep == "testing" || (strings.HasPrefix(dep, "github.com/countersign/") && strings.HasSuffix(last, "test")):
			t.Errorf("cmd/chaos depends on %s", dep)
		}
	}
	if !sawFake {
		t.Fatalf("go list -deps named %v, without the fake Slack", deps)
	}
}
