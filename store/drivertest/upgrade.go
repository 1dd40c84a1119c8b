package drivertest

import (
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

// MigrationsUpTo returns the migrations of migrations (one driver's) whose
// number is at most version: the schema of an older release, for upgrade
// tests to fill and migrate from.
func MigrationsUpTo(t *testing.T, migrations fs.FS, version int) fs.FS {
	t.Helper()
	entries, err := fs.ReadDir(migrations, ".")
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, e := range entries {
		number, _, ok := strings.Cut(e.Name(), "_")
		n, err := strconv.Atoi(number)
		if !ok || err != nil {
			t.Fatalf("migration %s has no number", e.Name())
		}
		if n > version {
			continue
		}
		data, err := fs.ReadFile(migrations, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = &fstest.MapFile{Data: data}
	}
	return out
}
