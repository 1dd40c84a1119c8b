package store

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The core knows no database: drivers import it, never the reverse. A
// package store file that imports a database package fails here.
func TestCoreImportsNoDatabase(t *testing.T) {
	forbidden := []string{"database/sql", "github.com/jackc/", "modernc.org/sqlite", "github.com/pressly/goose",
		"github.com/countersign/countersign/store/"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "store" { // the external tests run the drivers
			continue
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad) {
					t.Errorf("%s imports %s: the core must not depend on a database driver", name, path)
				}
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
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, "github.com/countersign/countersign/") && !allowed[path] {
					t.Errorf("%s imports %s: a driver imports only the core", name, path)
				}
			}
		}
	}
}
