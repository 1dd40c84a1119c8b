package main

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeBuilds()
	os.Exit(code)
}

// The release build carries no planted bug: without the chaosmutant tag
// every mutant.On is constant false, so the compiler drops the planted
// lines, their names and the variable that would choose one.
func TestReleaseBinaryHasNoMutants(t *testing.T) {
	path, err := buildCountersign("")
	if err != nil {
		t.Fatal(err)
	}
	binary, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append([]string{mutantEnv}, bugNames()...) {
		if bytes.Contains(binary, []byte(s)) {
			t.Errorf("the release binary contains %q", s)
		}
	}
}

// The planted bugs make test can afford (Quick) are each caught by the
// short run; make chaos-mutants runs them all.
func TestMutantsCaught(t *testing.T) {
	path, err := buildCountersign("chaosmutant")
	if err != nil {
		t.Fatal(err)
	}
	// The check above would pass on a binary where the search cannot see
	// the names; here they must show.
	if binary, err := os.ReadFile(path); err != nil || !bytes.Contains(binary, []byte(mutantEnv)) {
		t.Fatalf("the chaosmutant build does not carry %s (err %v)", mutantEnv, err)
	}
	for _, bug := range plantedBugs {
		if !bug.Quick {
			continue
		}
		t.Run(bug.Name, func(t *testing.T) {
			opts := shortRun
			began := time.Now()
			opts.Log = func(format string, args ...any) {
				t.Logf("%5.1fs "+format, append([]any{time.Since(began).Seconds()}, args...)...)
			}
			res := runMutant(context.Background(), opts, bug)
			t.Logf("\n%s", mutantTable([]mutantResult{res}))
			if !res.caught() {
				t.Errorf("planted bug %s (%s) survived the short run", bug.Name, bug.What)
			}
		})
	}
}

func bugNames() []string {
	var names []string
	for _, b := range plantedBugs {
		names = append(names, b.Name)
	}
	return names
}
