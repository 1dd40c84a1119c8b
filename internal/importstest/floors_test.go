package importstest_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// Every package of the module has a floor and tests its imports against
// it; the table names no package that is gone.
func TestEveryPackageHasAFloorAndHoldsIt(t *testing.T) {
	t.Parallel()
	pkgs := importstest.Packages(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages: %v", len(pkgs), pkgs)
	}
	listed := map[string]bool{}
	for _, pkg := range pkgs {
		listed[pkg] = true
		if _, ok := importstest.Floor(pkg); !ok {
			t.Errorf("%s has no floor: give it one in internal/importstest/floors.go and docs/ARCHITECTURE.md", pkg)
		}
		raw, err := os.ReadFile(filepath.Join("..", "..", pkg, "imports_test.go"))
		if err != nil {
			t.Errorf("%s does not test its imports: %v", pkg, err)
			continue
		}
		if want := "importstest.HoldsFloor(t, \".\", " + strconv.Quote(pkg) + ")"; !strings.Contains(string(raw), want) {
			t.Errorf("%s/imports_test.go does not call %s", pkg, want)
		}
	}
	for _, pkg := range importstest.Placed() {
		if !listed[pkg] {
			t.Errorf("floors.go places %s, which is no package of the module", pkg)
		}
	}
}
