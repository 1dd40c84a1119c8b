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
