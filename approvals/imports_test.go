package approvals

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The domain service knows no HTTP: the hook, the bot and the inbox are
// its surfaces and import it, never the reverse. A file of package
// approvals (tests aside) that imports net/http, or one of the surfaces,
// fails here.
func TestDomainImportsNoHTTP(t *testing.T) {
	forbidden := []string{"net/http", "github.com/countersign/countersign/hook",
		"github.com/countersign/countersign/bot", "github.com/countersign/countersign/inbox"}
	files, err := filepath.Glob("*.go")
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
			for _, bad := range forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s imports %s: the domain service must not depend on HTTP or on a surface", name, path)
				}
			}
		}
	}
}
