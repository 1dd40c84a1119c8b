package store

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Rules in Go, rows in SQL: a driver moves the rows the Ledger builds and
// decides none of them, and neither does a migration. A driver file (SQL or
// Go, tests aside) or a migration that spells an actor prefix, an event
// kind, an outbox kind or the claim timeout's code fails here, and so does
// an insert into events whose kind or actor is a literal. A migration may
// list outbox kinds in a CHECK constraint (the schema refusing a kind the
// core does not know), and its comments are prose.
func TestDriversSpellNoRules(t *testing.T) {
	// Kinds that are also a state's name ("claimed", "expired") can only be
	// told apart where events are inserted; these are kinds alone.
	forbidden := []string{"agent:", "executor:", "'" + CodeClaimTimeout + "'", `"` + CodeClaimTimeout + `"`}
	for _, kind := range []EventKind{EventRequested, EventDecided, EventVoted, EventResolved, EventResend,
		EventVerified, EventReminded, EventEscalated, EventDecisionRefused, EventResolutionRefused} {
		forbidden = append(forbidden, "'"+string(kind)+"'", `"`+string(kind)+`"`)
	}
	// Outbox kinds are the core's (OutboxPostCard and the rest), passed in.
	outboxKinds := []string{}
	for _, kind := range []OutboxKind{OutboxPostCard, OutboxUpdateCard, OutboxThreadReply} {
		outboxKinds = append(outboxKinds, "'"+string(kind)+"'", `"`+string(kind)+`"`)
	}
	forbidden = append(forbidden, outboxKinds...)
	// An insert into events, up to the end of its statement or its CTE.
	eventInsert := regexp.MustCompile(`(?s)INSERT INTO events\b.*?(;|\n\),)`)
	literal := regexp.MustCompile(`'[^']+'`)
	comment := regexp.MustCompile(`--[^\n]*`)
	check := regexp.MustCompile(`(?s)CHECK \(kind IN \([^)]*\)\)`)
	var files []string
	for _, dir := range []string{"postgres", "embedded", "../migrations/postgres", "../migrations/sqlite"} {
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
		if strings.HasPrefix(name, "../migrations/") {
			text = check.ReplaceAllString(comment.ReplaceAllString(text, ""), "")
		}
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

// The live executions (those not Retired) are selected in SQL by the list
// of retired states, a constant so a partial index can serve them: in the
// drivers' statements and in the migrations' indexes. Each list names
// exactly the states Retired reports, so a change of the rule in Go fails
// here until every statement and index follows it.
func TestLiveExecutionsAsInGo(t *testing.T) {
	var want []string
	for _, s := range execStates {
		if s.Retired() {
			want = append(want, string(s))
		}
	}
	slices.Sort(want)
	notIn := regexp.MustCompile(`state NOT IN \(([^)]*)\)`)
	var files []string
	for _, pattern := range []string{"postgres/*.sql", "embedded/*.sql", "../migrations/postgres/*.sql", "../migrations/sqlite/*.sql"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	lists := 0
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range notIn.FindAllStringSubmatch(string(raw), -1) {
			var got []string
			for _, v := range strings.Split(m[1], ",") {
				got = append(got, strings.Trim(strings.TrimSpace(v), "'"))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s lists %v; the retired states are %v (ExecState.Retired)", name, m[0], got, want)
			}
			lists++
		}
	}
	if lists == 0 {
		t.Fatal("no list of retired states found: the test reads nothing")
	}
}
