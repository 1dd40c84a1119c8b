// Command chaos plays a fault run against a fleet of countersign replicas
// built from this tree: three `countersign serve` processes on one fresh
// PostgreSQL database, agents posting valid and poisoned intents through
// random replicas, 2-of-N votes clicked on two replicas at once, a
// key-aware provider and a key-unaware one, an agent whose callback
// endpoint fails some deliveries, reminders and retention running
// throughout, while replicas are killed with SIGKILL (and, with
// -restart-postgres, a PostgreSQL cluster the run creates for itself is
// restarted once), the fleet's own database role is refused connections
// for 2 s, long-poll, SDK and MCP clients wait on intents across kills, and
// a pg_dump taken under load is restored and served after the run, with
// the same providers. Every write that reaches a provider is judged against
// the ledger; with -mutants it runs once per bug planted in the core code
// and fails if one is not caught. It prints the figures as a table
// and exits 1 when one is not what it must be. Everything listens on
// 127.0.0.1.
//
//	go run ./cmd/chaos -restart-postgres  # the full run, under 5 minutes (make chaos)
//	go run ./cmd/chaos                    # the same without the PostgreSQL restart
//	go run ./cmd/chaos -short             # about a minute, no PostgreSQL restart
//	go run ./cmd/chaos -mutants all       # the short run once per planted bug (make chaos-mutants)
//
// With -simulate-day it plays a day of a shared service's traffic instead,
// compressed into a few minutes (see day.go and docs/SCALING.md):
//
//	go run ./cmd/chaos -simulate-day             # 24 simulated hours in 4.5 minutes (make simulate-day)
//	go run ./cmd/chaos -simulate-day -day 10m    # the same day, slower
//	go run ./cmd/chaos -simulate-day -short      # the tiny day of TestTinyDay, 15 seconds
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// The two sizes of a run. Short is the version make test runs.
var (
	fullRun  = Options{Load: 150 * time.Second, Kills: 24, MinKills: 20, Agents: 4, Drain: 60 * time.Second}
	shortRun = Options{Load: 12 * time.Second, Kills: 4, MinKills: 4, Agents: 3, Drain: 60 * time.Second}
)

func main() {
	short := flag.Bool("short", false, "the short run (about a minute, no PostgreSQL restart)")
	// A restart cuts every connection to the server, other programs' too:
	// the run restarts only a cluster it creates for itself.
	restart := flag.Bool("restart-postgres", false, "run on a PostgreSQL cluster of the run's own (initdb on a free port; needs the server binaries) and restart it once under load (full run; make chaos sets it)")
	load := flag.Duration("load", 0, "how long the load lasts (default: 150s, or 15s with -short)")
	kills := flag.Int("kills", -1, "replica faults spread over the load, every fourth a SIGTERM and the rest kill -9 (default: 24, or 4 with -short)")
	simulate := flag.Bool("simulate-day", false, "play a compressed day of traffic (bursty agents, reviewers at human speed, a replica killed at noon) and print the queues hour by hour")
	dayLength := flag.Duration("day", 0, "wall time of the simulated day (default 4m30s)")
	intents := flag.Int("intents", 0, "intents posted over the simulated day, replays included (default 400)")
	mutants := flag.String("mutants", "", `run the short run once per planted bug ("all", or names separated by commas; see mutants.go) and fail if one survives`)
	adminURL := flag.String("database-url", adminURL(), "PostgreSQL server where a fresh database is created (and dropped after)")
	flag.Parse()
	os.Setenv(adminURLEnv, *adminURL)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *simulate {
		opts := fullDay
		if *short {
			opts = tinyDay
		}
		if *dayLength > 0 {
			opts.Day = *dayLength
		}
		if *intents > 0 {
			opts.Intents = *intents
		}
		code := simulateDay(ctx, opts)
		stop()
		os.Exit(code)
	}

	defer removeBuilds()
	if *mutants != "" {
		code := runMutants(ctx, *mutants)
		stop()
		removeBuilds()
		os.Exit(code)
	}

	opts := fullRun
	if *short {
		opts = shortRun
	} else {
		opts.RestartPostgres = *restart
	}
	if *load > 0 {
		opts.Load = *load
	}
	if *kills >= 0 {
		opts.Kills, opts.MinKills = *kills, min(opts.MinKills, *kills)
	}
	opts.Log = printLine
	began := time.Now()
	figs, err := Run(ctx, opts)
	removeBuilds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	fmt.Printf("\n%s\nrun took %s\n", figs.Table(), time.Since(began).Round(time.Second))
	if !figs.OK() {
		fmt.Println("FAIL: a figure is not what it must be")
		os.Exit(1)
	}
	fmt.Println("ok: nothing lost, nothing twice")
}

// runMutants plays the short run once per planted bug in list, prints the
// table of what caught each, and returns 1 when one survived.
func runMutants(ctx context.Context, list string) int {
	bugs, err := selectBugs(list)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	var results []mutantResult
	for _, bug := range bugs {
		printLine("=== planted bug %s: %s (%s)", bug.Name, bug.What, bug.Where)
		opts := shortRun
		opts.Log = printLine
		res := runMutant(ctx, opts, bug)
		printLine("%s", mutantTable([]mutantResult{res}))
		results = append(results, res)
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Printf("\n%s", mutantTable(results))
	for _, m := range results {
		if !m.caught() {
			fmt.Println("FAIL: a planted bug survived the short run")
			return 1
		}
	}
	if len(results) < len(bugs) {
		return 2
	}
	fmt.Printf("ok: all %d planted bugs caught\n", len(results))
	return 0
}

func printLine(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// simulateDay plays the day and returns the exit status: 1 when a bound
// is broken, 2 when the simulation itself could not go on.
func simulateDay(ctx context.Context, opts DayOptions) int {
	opts.Log = printLine
	began := time.Now()
	rep, err := SimulateDay(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "simulate-day:", err)
		return 2
	}
	fmt.Printf("\n%s\nrun took %s\n", rep.Table(), time.Since(began).Round(time.Second))
	if !rep.OK() {
		fmt.Println("FAIL: a bound is broken")
		return 1
	}
	fmt.Println("ok: the queues stayed bounded and drained")
	return 0
}
