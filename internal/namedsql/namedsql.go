// Package namedsql reads SQL files of named statements, so a driver's SQL
// lives in .sql files (embedded) rather than in Go strings. A statement
// starts at a line "-- name: NAME" and runs to the next one; a name written
// {{NAME}} inside a statement is replaced by that statement's text, for
// column lists and common parts shared by several statements.
package namedsql

import (
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

// Queries are the statements of one file, by name.
type Queries struct {
	file   string
	byName map[string]string
}

var (
	nameLine = regexp.MustCompile(`(?m)^-- name: (\S+)\s*$`)
	include  = regexp.MustCompile(`\{\{(\w+)\}\}`)
)

// MustLoad reads file from fsys. It panics on a file that cannot be read, a
// name given twice or an include of no statement: the files are embedded,
// so any of these is a bug found at start.
func MustLoad(fsys fs.FS, file string) Queries {
	raw, err := fs.ReadFile(fsys, file)
	if err != nil {
		panic(fmt.Sprintf("namedsql: %v", err))
	}
	q := Queries{file: file, byName: map[string]string{}}
	text := string(raw)
	locs := nameLine.FindAllStringSubmatchIndex(text, -1)
	for i, loc := range locs {
		name := text[loc[2]:loc[3]]
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if _, dup := q.byName[name]; dup {
			panic(fmt.Sprintf("namedsql: %s: %s is named twice", file, name))
		}
		q.byName[name] = strings.TrimSuffix(strings.TrimSpace(text[loc[1]:end]), ";")
	}
	for name := range q.byName {
		q.byName[name] = q.expand(name, 0)
	}
	return q
}

func (q Queries) expand(name string, depth int) string {
	if depth > 8 {
		panic(fmt.Sprintf("namedsql: %s: %s includes itself", q.file, name))
	}
	return include.ReplaceAllStringFunc(q.byName[name], func(m string) string {
		inc := m[2 : len(m)-2]
		if _, ok := q.byName[inc]; !ok {
			panic(fmt.Sprintf("namedsql: %s: %s includes %s, which is not in the file", q.file, name, inc))
		}
		return q.expand(inc, depth+1)
	})
}

// Get returns the statement called name; it panics if there is none.
func (q Queries) Get(name string) string {
	s, ok := q.byName[name]
	if !ok {
		panic(fmt.Sprintf("namedsql: %s has no statement %s", q.file, name))
	}
	return s
}
