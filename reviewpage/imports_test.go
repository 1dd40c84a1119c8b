package reviewpage

import (
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The package holds its floor in docs/ARCHITECTURE.md's layers: it imports
// only packages of countersign on a floor below its own
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "reviewpage")
}
