package surface

import (
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The port knows no surface: Slack (bot) and every other adapter import
// it, never the reverse, and it reaches the ledger only through the store's
// interfaces. A file of package surface (tests aside) that imports a
// surface, a driver or net/http fails here.
func TestPortImportsNoSurfaceNorDriver(t *testing.T) {
	forbidden := []string{"net/http", "github.com/slack-go/slack",
		"github.com/countersign/countersign/bot", "github.com/countersign/countersign/hook",
		"github.com/countersign/countersign/inbox", "github.com/countersign/countersign/store/postgres",
		"github.com/countersign/countersign/store/embedded"}
	for _, imp := range importstest.In(t, ".") {
		for _, bad := range forbidden {
			if !imp.Test && importstest.Under(imp.Path, bad) {
				t.Errorf("%s imports %s: the surface port must not depend on a surface, a driver or HTTP", imp.File, imp.Path)
			}
		}
	}
}

// The package holds its floor in docs/ARCHITECTURE.md's layers
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "surface")
}
