package client_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The client is what agents and providers import: beyond the standard
// library it may depend only on the two schemes and the representation
// (wire) it shares with the server and the RFC 8785 library they use,
// never on a service, a store or a driver.
func TestClientImportsNoServerPackage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{
		"github.com/countersign/countersign/client",
		"github.com/countersign/countersign/internal/intentkey",
		"github.com/countersign/countersign/internal/signature",
		"github.com/countersign/countersign/wire",
		"github.com/gowebpki/jcs",
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/countersign/countersign/internal/intentkey") {
		t.Fatalf("go list -deps named %v, without the key scheme", deps)
	}
	for _, dep := range deps {
		if !slices.Contains(allowed, dep) {
			t.Errorf("the client depends on %s", dep)
		}
	}
}

// The package holds its floor in docs/ARCHITECTURE.md's layers: it imports
// only packages of countersign on a floor below its own
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "client")
}
