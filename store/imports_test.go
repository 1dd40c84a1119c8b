package store

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/importstest"
)

// The core knows no database: drivers import it, never the reverse. A
// package store file that imports a database package fails here.
func TestCoreImportsNoDatabase(t *testing.T) {
	forbidden := []string{"database/sql", "github.com/jackc/", "modernc.org/sqlite", "github.com/pressly/goose",
		"github.com/countersign/countersign/store/"}
	for _, imp := range importstest.In(t, ".") {
		if imp.Package != "store" { // the external tests run the drivers
			continue
		}
		for _, bad := range forbidden {
			if strings.HasPrefix(imp.Path, bad) {
				t.Errorf("%s imports %s: the core must not depend on a database driver", imp.File, imp.Path)
			}
		}
	}
}

// A driver imports the core, the migrations and its database library:
// never a service, never the other driver.
func TestDriversImportOnlyTheCore(t *testing.T) {
	allowed := map[string]bool{
		"github.com/countersign/countersign/store":              true,
		"github.com/countersign/countersign/migrations":         true,
		"github.com/countersign/countersign/internal/namedsql":  true,
		"github.com/countersign/countersign/internal/startstop": true,
	}
	for _, dir := range []string{"postgres", "embedded"} {
		for _, imp := range importstest.In(t, dir) {
			if !imp.Test && strings.HasPrefix(imp.Path, "github.com/countersign/countersign/") && !allowed[imp.Path] {
				t.Errorf("%s imports %s: a driver imports only the core", imp.File, imp.Path)
			}
		}
	}
}

// The package holds its floor in docs/ARCHITECTURE.md's layers: it imports
// only packages of countersign on a floor below its own
// (internal/importstest/floors.go).
func TestImportsHoldTheirFloor(t *testing.T) {
	importstest.HoldsFloor(t, ".", "store")
}
