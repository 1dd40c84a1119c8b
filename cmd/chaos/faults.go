package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/sandbox"
)

// The phases a kill is aimed at: what the fleet is doing at the moment.
const (
	phaseIntake   = "intake"
	phaseVoting   = "voting"
	phaseDispatch = "dispatch"
	phaseCard     = "card post"
	phaseReply    = "thread reply"
	phaseCallback = "callback delivery"
)

var phases = []string{phaseIntake, phaseVoting, phaseDispatch, phaseCard, phaseReply, phaseCallback}

// fault is one kill or restart, and how long the fleet took to serve a
// new request end to end afterwards.
type fault struct {
	What     string
	Phases   []string // what was in flight when it struck
	At       time.Time
	Recovery time.Duration // 0 until measured; recoveryLimit when never
}

const recoveryLimit = 60 * time.Second

// faultLoop makes opts.Kills kills -9 spread over the load, one every
// Load/Kills with jitter, aiming each at the next phase in turn (waiting up
// to a second for it to be in flight); the killed replica starts again a
// moment later while the next kill is prepared. Halfway through it
// restarts PostgreSQL once, when asked and permitted.
func (r *run) faultLoop(load, ctx context.Context) {
	every := r.opts.Load / time.Duration(r.opts.Kills+1)
	pgDone := !r.opts.RestartPostgres
	if pgDone {
		r.opts.Log("PostgreSQL restart skipped: not asked for (-restart-postgres=false; the short run never restarts it)")
	} else {
		r.opts.Log("PostgreSQL restart: halfway, on the run's own cluster (port %d)", r.cluster.port)
	}
	var restarts sync.WaitGroup
	defer restarts.Wait()
	restarts.Add(3)
	go func() { defer restarts.Done(); r.providerOutage(load) }()
	go func() { defer restarts.Done(); r.connectionLimit(load) }()
	go func() { defer restarts.Done(); r.reconfigure(load) }()
	for i := range r.opts.Kills {
		at := r.started.Add(every*time.Duration(i+1) - every/4 + time.Duration(rand.Int64N(int64(every/2))))
		select {
		case <-load.Done():
			return
		case <-time.After(time.Until(at)):
		}
		if !pgDone && i >= r.opts.Kills/2 {
			pgDone = true
			r.restartPostgres()
		}
		target := phases[i%len(phases)]
		aim := time.Now().Add(time.Second)
		for !r.busy(target) && time.Now().Before(aim) && load.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		var up []*replica
		for _, rep := range r.fleet.replicas {
			if rep.url() != "" {
				up = append(up, rep)
			}
		}
		if len(up) == 0 {
			continue
		}
		victim := up[rand.IntN(len(up))]
		if w := r.waitedOn(up); w != nil && i%2 == 0 {
			// Every other kill strikes where a client waits, when one does.
			victim = w
		}
		inFlight := r.inFlight()
		what := "kill -9 "
		if i%4 == 1 {
			// Every fourth is graceful: SIGTERM, and the replica finishes
			// what it claimed before it exits.
			what = "SIGTERM "
			victim.stop()
		} else {
			victim.kill()
		}
		f := r.record(what+victim.name, inFlight)
		go r.measureRecovery(f)
		restarts.Add(1)
		go func() {
			defer restarts.Done()
			time.Sleep(time.Duration(300+rand.IntN(1200)) * time.Millisecond)
			if err := victim.restart(ctx, r.opts.Log); err != nil {
				r.fail(fmt.Errorf("restarting %s: %w", victim.name, err))
			}
		}()
	}
}

// busy reports whether phase has work in flight.
func (r *run) busy(phase string) bool {
	switch phase {
	case phaseCard, phaseReply:
		return r.recentPost(phase == phaseReply)
	}
	return r.flights[phase].busy()
}

// recentPost reports whether a card (or a thread reply) was posted to Slack
// in the last 300ms: the fake answers at once, so a post "in flight" is one
// whose poster may not have recorded it yet.
func (r *run) recentPost(reply bool) bool {
	calls := r.slack.Calls("chat.postMessage")
	for i := len(calls) - 1; i >= 0 && time.Since(calls[i].At) < 300*time.Millisecond; i-- {
		if (calls[i].Form.Get("thread_ts") != "") == reply {
			return true
		}
	}
	return false
}

func (r *run) inFlight() []string {
	var now []string
	for _, p := range phases {
		if r.busy(p) {
			now = append(now, p)
		}
	}
	return now
}

func (r *run) record(what string, inFlight []string) *fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &fault{What: what, Phases: inFlight, At: time.Now()}
	r.faults = append(r.faults, f)
	r.opts.Log("%5.1fs  %s (%s) during %s", time.Since(r.started).Seconds(), what, f.At.UTC().Format("15:04:05.000"), strings.Join(inFlight, ", "))
	return f
}

// measureRecovery posts a canary intent right after a fault, approves it
// through two replicas and waits for its write to succeed: the time from
// the fault to that success is the fleet's recovery.
func (r *run) measureRecovery(f *fault) {
	r.canaries.Add(1)
	defer r.canaries.Add(-1)
	ctx, cancel := context.WithTimeout(context.Background(), recoveryLimit)
	defer cancel()
	n := int(time.Now().UnixNano() % 1e9)
	in := r.acknowledge(ctx, agentToken, validIntent("chaos-canary", n, "chaos.keyed"), "chaos.keyed")
	recovery := recoveryLimit
	if in != nil {
		in.Verdict = "approve"
		r.vote(in)
		for ctx.Err() == nil {
			if r.settled(ctx, in.Key) {
				recovery = time.Since(f.At)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	r.mu.Lock()
	f.Recovery = recovery
	r.mu.Unlock()
}

// settled reports whether key's write succeeded (pruned since, its
// tombstone says so).
func (r *run) settled(ctx context.Context, key string) bool {
	var ok bool
	err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM executions e JOIN requests q ON q.id = e.request_id
		WHERE q.key = $1 AND e.state = 'succeeded') OR EXISTS (SELECT 1 FROM tombstones WHERE key = $1 AND status = 'succeeded')`, key).Scan(&ok)
	return err == nil && ok
}

func (r *run) waitCanaries() {
	for r.canaries.Load() > 0 {
		time.Sleep(50 * time.Millisecond)
	}
}

// restartPostgres restarts the run's own PostgreSQL cluster under load
// once.
func (r *run) restartPostgres() {
	inFlight, began := r.inFlight(), time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := r.cluster.restart(ctx); err != nil {
		r.fail(err)
		return
	}
	// Recovery counts from when PostgreSQL is back: how long the server
	// takes to stop and start is not countersign's.
	f := r.record(fmt.Sprintf("PostgreSQL restart (the run's own cluster on port %d, took %s)", r.cluster.port, time.Since(began).Round(100*time.Millisecond)), inFlight)
	go r.measureRecovery(f)
}

// outageFor is how long the key-aware provider answers every write 503.
const (
	outageFor   = 2 * time.Second
	outageFault = "key-aware provider answering 503"
)

// providerOutage makes the key-aware provider answer every write 503 for
// outageFor, a third into the load, then serve again: the writes retried
// under their keys must each succeed once. Recovery counts from the end
// of the outage.
func (r *run) providerOutage(load context.Context) {
	select {
	case <-load.Done():
		return
	case <-time.After(time.Until(r.started.Add(r.opts.Load / 3))):
	}
	inFlight := r.inFlight()
	r.keyed.Set(sandbox.Behavior{Status: http.StatusServiceUnavailable, Code: "unavailable"})
	time.Sleep(outageFor)
	r.keyed.Set(sandbox.Behavior{Delay: slowProvider})
	f := r.record(fmt.Sprintf("%s for %s, then serving", outageFault, outageFor), inFlight)
	go r.measureRecovery(f)
}

// reconfigure, two thirds into the load, changes the configuration file
// (the tools' reminders come 3 s after a card instead of 2 s) and sends
// every serving replica SIGHUP: each must log that it reloaded, within
// 10 s, unless it was killed meanwhile.
func (r *run) reconfigure(load context.Context) {
	select {
	case <-load.Done():
		return
	case <-time.After(time.Until(r.started.Add(r.opts.Load * 2 / 3))):
	}
	if err := r.rewriteConfig(func(c string) string { return strings.ReplaceAll(c, "remind_after: 2s", "remind_after: 3s") }); err != nil {
		r.fail(err)
		return
	}
	inFlight := r.inFlight()
	sent := map[*replica]hup{}
	for _, rep := range r.fleet.replicas {
		if before, ok := rep.hangUp(); ok {
			sent[rep] = before
		}
	}
	r.mu.Lock()
	r.hupped += len(sent)
	r.mu.Unlock()
	f := r.record(fmt.Sprintf("SIGHUP to %d replicas, the configuration changed (remind_after 2s to 3s)", len(sent)), inFlight)
	go r.measureRecovery(f)
	deadline := time.Now().Add(10 * time.Second)
	for len(sent) > 0 && time.Now().Before(deadline) {
		for rep, before := range sent {
			if done, alive := rep.reloaded(before); done || !alive {
				delete(sent, rep)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.mu.Lock()
	r.unreloaded += len(sent)
	r.mu.Unlock()
}

const (
	connLimitFor   = 2 * time.Second
	connLimitFault = "the fleet's database role at CONNECTION LIMIT 0"
)

// connectionLimit, two fifths into the load, sets the fleet's role (the
// run's own; no other) to CONNECTION LIMIT 0 and cuts that role's backends
// on the run's database, for connLimitFor: no replica can reach the
// database, and every answer meanwhile must be 503 unavailable or a
// success. Then the limit is lifted (retried until it takes: the role must
// never stay locked out); recovery counts from there.
func (r *run) connectionLimit(load context.Context) {
	select {
	case <-load.Done():
		return
	case <-time.After(time.Until(r.started.Add(r.opts.Load * 2 / 5))):
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	role := pgx.Identifier{r.role}.Sanitize()
	inFlight := r.inFlight()
	if _, err := r.db.Exec(ctx, "ALTER ROLE "+role+" CONNECTION LIMIT 0"); err != nil {
		r.fail(fmt.Errorf("limiting the fleet's role: %w", err))
		return
	}
	r.mu.Lock()
	r.connLimited = true
	r.mu.Unlock()
	var cut int
	err := r.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE usename = $1 AND datname = current_database()`, r.role).Scan(&cut)
	if err != nil {
		r.opts.Log("cutting the fleet's backends: %v", err)
	}
	time.Sleep(connLimitFor)
	for {
		_, err := r.db.Exec(ctx, "ALTER ROLE "+role+" CONNECTION LIMIT -1")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			r.fail(fmt.Errorf("lifting the fleet's connection limit: %w", err))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.mu.Lock()
	r.connLimited, r.connCut = false, cut
	r.mu.Unlock()
	f := r.record(fmt.Sprintf("%s for %s (%d backends cut), then lifted", connLimitFault, connLimitFor, cut), inFlight)
	go r.measureRecovery(f)
}
