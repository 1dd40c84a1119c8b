package mcpserver_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The MCP server is a client of countersign: it reaches countersign only
// through the Go client and the representation they share (wire), never a
// service, a store or a database driver; of the server's packages it takes
// only leaves (identity's rule for ids).
func TestMCPServerImportsNoServerPackage(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	ours := map[string]bool{
		"github.com/countersign/countersign/mcpserver":          true,
		"github.com/countersign/countersign/client":             true,
		"github.com/countersign/countersign/internal/intentkey": true,
		"github.com/countersign/countersign/internal/signature": true,
		"github.com/countersign/countersign/wire":               true,
		"github.com/countersign/countersign/identity":           true, // a leaf: the rule for ids, standard library only
	}
	sawClient := false
	for _, dep := range deps {
		switch {
		case dep == "github.com/countersign/countersign/client":
			sawClient = true
		case strings.HasPrefix(dep, "github.com/countersign/") && !ours[dep]:
			t.Errorf("the MCP server depends on %s", dep)
		case strings.Contains(dep, "pgx") || strings.Contains(dep, "sqlite"):
			t.Errorf("the MCP server depends on a database driver, %s", dep)
		}
	}
	if !sawClient {
		t.Fatalf("go list -deps named %v, without the client", deps)
	}
}

// The package holds its floor in docs/ARCHITECTURE.md's layers: it imports
// only packages of countersign on a floor below its own
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "mcpserver")
}
