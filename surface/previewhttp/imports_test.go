package previewhttp

import (
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The package holds its floor in docs/ARCHITECTURE.md's layers
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "surface/previewhttp")
}
