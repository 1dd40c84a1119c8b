package delivery

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The worker knows no store, surface or HTTP: what is claimed, how it is
// sent and how an outcome is written belong to its Queue and Deliver. A
// file of package delivery (tests aside) that imports anything of
// countersign's but internal/startstop and internal/outbound, or net/http,
// fails here.
func TestWorkerImportsNoStoreNorSurface(t *testing.T) {
	allowed := []string{"github.com/countersign/countersign/internal/startstop", "github.com/countersign/countersign/internal/outbound"}
	for _, imp := range importstest.In(t, ".") {
		if imp.Test {
			continue
		}
		if importstest.Under(imp.Path, "net/http") {
			t.Errorf("%s imports %s: the worker sends nothing itself", imp.File, imp.Path)
		}
		if strings.HasPrefix(imp.Path, "github.com/countersign/countersign/") && !importstest.Under(imp.Path, allowed[0]) && !importstest.Under(imp.Path, allowed[1]) {
			t.Errorf("%s imports %s: the worker is plumbing, below the store and the surfaces", imp.File, imp.Path)
		}
	}
}

// The package holds its floor in docs/ARCHITECTURE.md's layers
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "delivery")
}
