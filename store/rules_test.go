package store

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Rules in Go, rows in SQL: a driver moves the rows the Ledger builds and
// decides none of them. A driver file (SQL or Go, tests aside) that spells
// an actor prefix, an event kind or an outbox kind fails here, and so does
// an insert into events whose kind or actor is a literal.
func TestDriversSpellNoRules(t *testing.T) {
	// Kinds that are also a state's name ("claimed", "expired") can only be
	// told apart where events are inserted; these are kinds alone.
	forbidden := []string{"agent:", "executor:", "'requested'", `"requested"`, "'decided'", `"decided"`,
		"'voted'", `"voted"`, "'resolved'", `"resolved"`}
	// Outbox kinds are the core's (OutboxPostCard and the rest), passed in.
	for _, kind := range []OutboxKind{OutboxPostCard, OutboxUpdateCard, OutboxThreadReply} {
		forbidden = append(forbidden, "'"+string(kind)+"'", `"`+string(kind)+`"`)
	}
	// An insert into events, up to the end of its statement or its CTE.
	eventInsert := regexp.MustCompile(`(?s)INSERT INTO events\b.*?(;|\n\),)`)
	literal := regexp.MustCompile(`'[^']+'`)
	var files []string
	for _, dir := range []string{"postgres", "embedded"} {
		for _, pattern := range []string{"*.go", "*.sql"} {
			found, err := filepath.Glob(filepath.Join(dir, pattern))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, found...)
		}
	}
	if len(files) == 0 {
		t.Fatal("no driver files found")
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, bad := range forbidden {
			if strings.Contains(text, bad) {
				t.Errorf("%s spells %s: event kinds, actors and outbox kinds are built in the Ledger and passed in", name, bad)
			}
		}
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		for _, insert := range eventInsert.FindAllString(text, -1) {
			if lit := literal.FindString(insert); lit != "" {
				t.Errorf("%s inserts events with the literal %s: the Ledger builds an event's kind, actor and data", name, lit)
			}
		}
	}
}
