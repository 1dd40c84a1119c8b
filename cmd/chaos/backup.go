package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A backup taken under load and restored after the run: pg_dump -Fc of the
// run's database three tenths into the load; after the run, pg_restore into
// a fresh database, `countersign restore --postgres`, one replica on the
// copy with the same providers, Slack and agent, every request pending in
// the copy approved. The copy remembers less than the providers: writes
// performed after the backup are, in it, unsettled or not yet approved. The
// providers' recorders count on across both, and nothing may be performed
// twice.

// errNoDumpTools says how to get what the backup fault needs.
var errNoDumpTools = errors.New("the backup fault needs PostgreSQL's client programs (pg_dump, pg_restore), and none were found in " +
	pgBinGlob + " or on PATH: install them (apt-get install postgresql-client) and run again")

// dumpToolsDir is the directory of pg_dump and pg_restore: the run's own
// cluster's, else the newest installed (a newer pg_dump reads an older
// server), else PATH's.
func (r *run) dumpToolsDir() (string, error) {
	if r.cluster != nil {
		return r.cluster.bin, nil
	}
	dirs, _ := filepath.Glob(pgBinGlob)
	best := ""
	for _, d := range dirs {
		if executable(filepath.Join(d, "pg_dump")) && executable(filepath.Join(d, "pg_restore")) && (best == "" || majorOf(d) > majorOf(best)) {
			best = d
		}
	}
	if best != "" {
		return best, nil
	}
	if p, err := exec.LookPath("pg_dump"); err == nil && executable(filepath.Join(filepath.Dir(p), "pg_restore")) {
		return filepath.Dir(p), nil
	}
	return "", errNoDumpTools
}

const backupFault = "pg_dump of the database under load"

// takeBackup, three tenths into the load, dumps the run's database as its
// owner (pg_dump -Fc), tried again for up to a minute should a PostgreSQL
// restart cut it.
func (r *run) takeBackup(load context.Context) {
	select {
	case <-load.Done():
		return
	case <-time.After(time.Until(r.started.Add(r.opts.Load * 3 / 10))):
	}
	file := filepath.Join(r.dir, "chaos.dump")
	inFlight, began := r.inFlight(), time.Now()
	var out []byte
	err := errors.New("not tried")
	for time.Since(began) < time.Minute && err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err = exec.CommandContext(ctx, filepath.Join(r.pgTools, "pg_dump"), "-Fc", "-f", file, "--dbname", r.ownerURL).CombinedOutput()
		cancel()
		if err != nil {
			time.Sleep(500 * time.Millisecond)
		}
	}
	if err != nil {
		r.fail(fmt.Errorf("pg_dump: %v\n%s", err, out))
		return
	}
	r.mu.Lock()
	r.backupFile = file
	r.mu.Unlock()
	f := r.record(fmt.Sprintf("%s (took %s)", backupFault, time.Since(began).Round(10*time.Millisecond)), inFlight)
	go r.measureRecovery(f)
}

// restoreCopy restores the backup into a fresh database, marks it with
// `countersign restore --postgres`, serves it with one replica, approves
// every request pending in it, lets its writes settle, and judges the
// providers' writes across the run and its copy.
func (r *run) restoreCopy(ctx context.Context, s *scope, f *Figures) error {
	if r.backupFile == "" {
		f.check("backups taken under load and restored", 0, 1)
		return nil
	}
	began := time.Now()
	copyURL, err := s.scratchDatabase(ctx)
	if err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, filepath.Join(r.pgTools, "pg_restore"), "--no-owner", "--no-privileges", "--exit-on-error",
		"--dbname", copyURL, r.backupFile).CombinedOutput(); err != nil {
		return fmt.Errorf("pg_restore: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, r.binary, "restore", "--postgres")
	cmd.Env = append(os.Environ(), "COUNTERSIGN_DATABASE_URL="+copyURL)
	marked, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("countersign restore --postgres: %v\n%s", err, marked)
	}
	db, err := pgxpool.New(ctx, copyURL)
	if err != nil {
		return err
	}
	s.Cleanup(db.Close)
	var unsettled int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM executions WHERE state IN ('ready', 'claimed', 'unknown')`).Scan(&unsettled); err != nil {
		return err
	}
	var pending []*intent
	rows, err := db.Query(ctx, `SELECT key FROM requests WHERE status = 'pending'`)
	if err != nil {
		return err
	}
	byKey := map[string]*intent{}
	for _, in := range r.intents {
		byKey[in.Key] = in
	}
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			rows.Close()
			return err
		}
		if in := byKey[key]; in != nil {
			copied := *in
			copied.Verdict = "approve"
			pending = append(pending, &copied)
		}
	}
	rows.Close()

	// The copy is served as its owner: the fleet's role was granted its
	// rights on the run's database only.
	env := append([]string(nil), r.replicaEnv...)
	for i, e := range env {
		if strings.HasPrefix(e, "COUNTERSIGN_DATABASE_URL=") {
			env[i] = "COUNTERSIGN_DATABASE_URL=" + copyURL
		}
	}
	rep := &replica{name: "restored-1", binary: r.binary, env: env}
	s.Cleanup(rep.stop)
	if err := rep.restart(ctx, r.opts.Log); err != nil {
		return err
	}
	served := time.Now()
	r.opts.Log("restored the backup (%s); %d executions unsettled and %d requests pending in the copy; approving them", firstLine(string(marked)), unsettled, len(pending))
	// From here the run's clicks and drain read the copy.
	mainDB := r.db
	r.db, r.fleet = db, &fleet{replicas: []*replica{rep}}
	defer func() { r.db = mainDB }()
	var votes sync.WaitGroup
	for _, in := range pending {
		votes.Add(1)
		go func() { defer votes.Done(); r.vote(in) }()
	}
	votes.Wait()
	settledIn := r.drainWrites(ctx)
	if err := r.failure(); err != nil {
		return err
	}
	return r.judgeCopy(ctx, f, db, served, len(pending), unsettled, settledIn, time.Since(began))
}

// drainWrites waits until no approved write is waiting or in flight, and
// returns how long that took (-1: not within Drain). Slack posts and
// callbacks are the run's drain's to check.
func (r *run) drainWrites(ctx context.Context) time.Duration {
	start := time.Now()
	for time.Since(start) < r.opts.Drain {
		var open int
		err := r.db.QueryRow(ctx, `SELECT count(*) FROM executions WHERE state IN ('ready', 'claimed', 'unknown')`).Scan(&open)
		if err == nil && open == 0 {
			return time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return -1
}

// judgeCopy judges the providers' writes across the run and its restored
// copy: a key-unaware key written once ever, one effect per key, every
// write the copy sent approved in the copy, every approval in it settled as
// the provider says.
func (r *run) judgeCopy(ctx context.Context, f *Figures, db *pgxpool.Pool, served time.Time, approved, unsettled int, settledIn, took time.Duration) error {
	approvedInCopy := map[string]bool{}
	finals := map[string]string{}
	rows, err := db.Query(ctx, `SELECT q.key, q.status, coalesce(e.state, '') FROM requests q
		LEFT JOIN LATERAL (SELECT state FROM executions WHERE request_id = q.id ORDER BY id DESC LIMIT 1) e ON true`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var key, status, state string
		if err := rows.Scan(&key, &status, &state); err != nil {
			rows.Close()
			return err
		}
		if status == "approved" {
			approvedInCopy[key], finals[key] = true, state
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var tombstoned int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM tombstones`).Scan(&tombstoned); err != nil {
		return err
	}

	twice, unapproved, copyWrites := 0, 0, 0
	for _, l := range []*writeLog{r.keyedLog, r.unkeyedLog} {
		for key, ws := range l.byKey() {
			if l == r.unkeyedLog && len(ws) > 1 {
				twice++
				f.note("judged wrong", "key-unaware %s reached the provider %d times, the run and its restored copy together", key, len(ws))
			}
			for _, w := range ws {
				if w.At.After(served) {
					copyWrites++
					if !approvedInCopy[key] {
						unapproved++
						f.note("judged wrong", "the restored copy wrote %s, which it has no approval for", key)
					}
				}
			}
		}
	}
	effects := 0
	for _, objects := range []map[string][]time.Time{objectsByKey(r.keyed.AllObjects()), objectsByKey(r.unkeyed.AllObjects())} {
		for _, ats := range objects {
			if len(ats) > 1 {
				effects++
			}
		}
	}
	missettled := 0
	for key, state := range finals {
		want := "succeeded"
		if r.refusing(key) {
			want = "failed"
		}
		if state != want {
			missettled++
			if missettled <= 3 {
				f.note("judged wrong", "%s settled %q in the restored copy; the provider says %q", key, state, want)
			}
		}
	}
	var verified int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM events WHERE kind = 'succeeded' AND data->>'restored' = 'true'`).Scan(&verified); err != nil {
		return err
	}
	f.check("key-unaware keys written more than once, the run and its restored copy together", twice, 0)
	f.check("keys with more than one effect at a provider, after the restored copy", effects, 0)
	f.check("writes the restored copy sent without an approval in it", unapproved, 0)
	f.check("approved writes in the restored copy settled otherwise than the provider says", missettled, 0)
	value := settledIn.Round(10 * time.Millisecond).String()
	if settledIn < 0 {
		value = "not within " + r.opts.Drain.String()
	}
	f.Checked = append(f.Checked, Row{Name: "time for the restored copy's writes to settle", Value: value, Want: "< " + r.opts.Drain.String(), OK: settledIn >= 0})
	f.note("the restored copy", "%d executions unsettled and %d requests pending in it (%d pruned ones as tombstones), all approved; %d writes sent, %d executions settled by the verify URL with nothing sent; restore to settled in %s",
		unsettled, approved, tombstoned, copyWrites, verified, took.Round(100*time.Millisecond))
	return nil
}
