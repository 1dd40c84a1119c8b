package approvals

import (
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The domain service knows no HTTP: the hook, the bot and the inbox are
// its surfaces and import it, never the reverse. A file of package
// approvals (tests aside) that imports net/http, or one of the surfaces,
// fails here.
func TestDomainImportsNoHTTP(t *testing.T) {
	forbidden := []string{"net/http", "github.com/countersign/countersign/hook",
		"github.com/countersign/countersign/bot", "github.com/countersign/countersign/inbox"}
	for _, imp := range importstest.In(t, ".") {
		for _, bad := range forbidden {
			if !imp.Test && importstest.Under(imp.Path, bad) {
				t.Errorf("%s imports %s: the domain service must not depend on HTTP or on a surface", imp.File, imp.Path)
			}
		}
	}
}

// The package holds its floor in docs/ARCHITECTURE.md's layers: it imports
// only packages of countersign on a floor below its own
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "approvals")
}
