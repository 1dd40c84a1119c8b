// Package importstest reads what a directory's Go files import, for tests
// that hold a package to its floor in the layers (docs/ARCHITECTURE.md).
package importstest

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Import is one import of one file.
type Import struct {
	File    string // path of the file, as globbed under dir
	Package string // the file's package clause
	Test    bool   // a _test.go file
	Path    string // the imported path
}

// In returns every import of every .go file in dir.
func In(t testing.TB, dir string) []Import {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []Import
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			out = append(out, Import{File: name, Package: f.Name.Name, Test: strings.HasSuffix(name, "_test.go"), Path: path})
		}
	}
	return out
}

// Under reports whether path is prefix or a package below it.
func Under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, strings.TrimSuffix(prefix, "/")+"/")
}
