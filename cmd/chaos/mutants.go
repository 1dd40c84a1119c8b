package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"
)

// mutantEnv chooses the planted bug of a build with the chaosmutant tag
// (internal/mutant).
const mutantEnv = "COUNTERSIGN_CHAOS_MUTANT"

// plantedBug is one bug planted in the core code behind mutant.On or
// mutant.Every: the short run must catch each.
type plantedBug struct {
	Name  string
	What  string
	Where string
	Quick bool // caught within a minute of load and drain: make test runs it
}

var plantedBugs = []plantedBug{
	{"skip-unkeyed-write", "the executor skips 1 in 8 key-unaware writes and records a provider 422", "executor/dispatch.go", true},
	{"intake-500", "1 in 5 new intents stored, then answered 500", "hook/handler.go", true},
	{"key-plus-x", `1 in 8 key-aware writes sent under the key plus "x"`, "executor/dispatch.go", true},
	{"resend-after-crash", "an unknown key-unaware outcome resent without asking the verify URL (a second send after a crash or timeout)", "executor/verify.go", false},
	{"decision-twice", "1 in 4 decisions recorded twice", "store/ledger.go", false},
	{"card-twice", "1 in 4 cards posted twice", "bot/deliver.go", false},
	{"callback-dropped", "1 in 6 callbacks recorded as delivered and never sent", "callback/deliverer.go", false},
	{"pruned-runs-again", "settled requests pruned without their tombstone, so the key can run again", "store/retention.go", false},
	{"write-without-approval", "1 in 3 rejected requests get an execution, and their write is sent", "store/ledger.go", false},
}

// mutantResult is one planted bug's short run: the checks that failed, or
// why the run itself stopped.
type mutantResult struct {
	Bug      plantedBug
	CaughtBy []string
	Err      error
	Took     time.Duration
}

func (m mutantResult) caught() bool { return len(m.CaughtBy) > 0 || m.Err != nil }

// runMutant plays the short run on replicas built with the chaosmutant tag
// and bug switched on.
func runMutant(ctx context.Context, opts Options, bug plantedBug) mutantResult {
	opts.Mutant = bug.Name
	began := time.Now()
	figs, err := Run(ctx, opts)
	res := mutantResult{Bug: bug, Err: err, Took: time.Since(began)}
	for _, row := range figs.Checked {
		if !row.OK {
			res.CaughtBy = append(res.CaughtBy, fmt.Sprintf("%s (%s, must be %s)", row.Name, row.Value, row.Want))
		}
	}
	return res
}

// mutantTable prints which check caught each planted bug.
func mutantTable(results []mutantResult) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "planted bug\tcaught by\ttook\t")
	for _, m := range results {
		by := strings.Join(m.CaughtBy, "; ")
		switch {
		case m.Err != nil && by == "":
			by = "the run stopped: " + firstLine(m.Err.Error())
		case !m.caught():
			by = "SURVIVED"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t\n", m.Bug.Name, by, m.Took.Round(time.Second))
	}
	w.Flush()
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// selectBugs returns the planted bugs named in list (comma-separated;
// "all" for every one).
func selectBugs(list string) ([]plantedBug, error) {
	if list == "all" {
		return plantedBugs, nil
	}
	var out []plantedBug
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, b := range plantedBugs {
			if b.Name == strings.TrimSpace(name) {
				out, found = append(out, b), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no planted bug %q (see cmd/chaos/mutants.go)", name)
		}
	}
	return out, nil
}
