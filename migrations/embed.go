// Package migrations holds countersign's schema as ordered SQL files, one
// directory per driver. Both directories share the numbers and names: a
// schema change lands in both in the same commit, under the same version.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Postgres and SQLite hold each driver's migrations, applied in order by goose.
var (
	Postgres = sub("postgres")
	SQLite   = sub("sqlite")
)

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic(err)
	}
	return f
}
