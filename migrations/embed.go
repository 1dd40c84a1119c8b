// Package migrations holds countersign's PostgreSQL schema as ordered SQL files.
package migrations

import "embed"

// FS holds the migration files, applied in order by goose.
//
//go:embed *.sql
var FS embed.FS
