package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/countersign/countersign/bot/fakeslack"
	"github.com/countersign/countersign/sandbox"
)

// Options size a chaos run.
type Options struct {
	Load            time.Duration // how long agents post and replicas are killed
	Kills           int           // kills -9 spread over the load
	MinKills        int           // kills that must have happened (a PostgreSQL restart may take a slot or two)
	Agents          int           // agents posting at once
	Drain           time.Duration // the most the fleet gets to settle after the load
	RestartPostgres bool          // restart PostgreSQL once, mid-run, when permitted
	Mutant          string        // the planted bug the replicas run with (see mutants.go); "" for none
	Log             func(format string, args ...any)
}

const (
	replicas       = 3
	slackChannel   = "C0CHAOS"
	slackSecret    = "chaos-slack-secret"
	dispatchSecret = "chaos-dispatch-secret"
	retentionFor   = 3 * time.Second
	slowProvider   = 300 * time.Millisecond
	// slowPastTimeout is longer than chaos.unkeyed's dispatch timeout (2s).
	slowPastTimeout = 3 * time.Second
)

var approvers = []string{"U1", "U2", "U3", "U4"}

// run is one chaos run's state.
type run struct {
	opts    Options
	db      *pgxpool.Pool
	fleet   *fleet
	slack   *fakeslack.Slack
	keyed   *sandbox.Provider // honours keys; slow
	unkeyed *sandbox.Provider // ignores keys; verified by URL
	// keyedLog and unkeyedLog are every write each provider received.
	keyedLog, unkeyedLog *writeLog
	agent                *agentEndpoint
	flights              map[string]*inFlight // phase → requests in flight
	started              time.Time
	canaries             atomic.Int64
	reclicks             atomic.Int64 // clicks answered 200 whose vote was not recorded
	// slowUnkeyed counts key-unaware approvals: the first and every tenth
	// is answered past the dispatch timeout.
	slowUnkeyed atomic.Int64

	mu      sync.Mutex
	intents []*intent
	waiters []*waiter
	// waitingOn counts the waiting clients' requests open on each replica.
	waitingOn map[string]int
	poisoned  map[string]map[string]int // kind → "status code" → times
	stored    int                       // poisoned intents answered 2xx
	replays   map[string]int            // replay answers by status
	faults    []*fault
	refused   map[string]bool // keys the key-aware provider refuses for good
	answers   answerBook
	cluster   *ownCluster // the PostgreSQL of the run's own, with -restart-postgres
	role      string      // the database role the fleet connects as, the run's own
	ownerURL  string      // the run's database as its owner
	// dir, binary and replicaEnv are the fleet's files, build and
	// environment, for the replica on the restored copy.
	dir, binary string
	replicaEnv  []string
	pgTools     string // where pg_dump and pg_restore are
	front       *front // the balancer the stdio MCP client talks through
	backupFile  string // the pg_dump taken under load, once taken
	// connLimited is true while the role may not connect; connRefused
	// counts the answers 503 unavailable meanwhile, connCut the
	// backends cut when it began.
	connLimited          bool
	connRefused, connCut int
	// rewriteConfig writes the configuration file again, changed.
	rewriteConfig func(change func(string) string) error
	unreloaded    int    // replicas sent SIGHUP that did not reload
	hupped        int    // replicas sent SIGHUP
	waiting       int    // intents left pending on purpose
	ranAgain      int    // pruned keys whose replay was not answered 410
	openWork      string // what was still open when the drain last looked
	err           error  // the first thing that made the run itself fail
}

// fail records why the run cannot go on; the first reason wins.
func (r *run) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *run) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func newRun(opts Options) *run {
	r := &run{opts: opts, poisoned: map[string]map[string]int{}, replays: map[string]int{},
		flights: map[string]*inFlight{}, refused: map[string]bool{}, waitingOn: map[string]int{}}
	for _, p := range phases {
		r.flights[p] = &inFlight{}
	}
	return r
}

// Run plays a chaos run and returns its figures.
func Run(ctx context.Context, opts Options) (figs Figures, err error) {
	s := &scope{}
	defer s.close()
	r := newRun(opts)
	if opts.RestartPostgres {
		// Restarting a server cuts every program's connections to it: the
		// run restarts only a cluster it created.
		if r.cluster, err = startOwnCluster(ctx, s, opts.Log); err != nil {
			return figs, err
		}
		os.Setenv(adminURLEnv, r.cluster.URL())
	}
	if r.pgTools, err = r.dumpToolsDir(); err != nil {
		return figs, err
	}
	if err := r.startFleet(ctx, s, replicas, configYAML); err != nil {
		return figs, err
	}
	if r.front, err = r.startFront(s); err != nil {
		return figs, err
	}
	r.keyed.Set(sandbox.Behavior{Delay: slowProvider})
	r.unkeyed.IgnoreKeys(true)
	opts.Log("%d replicas serving; load for %s with %d replica faults (kill -9, every fourth a SIGTERM)", replicas, opts.Load, opts.Kills)

	r.started = time.Now()
	loadCtx, stopLoad := context.WithTimeout(ctx, opts.Load)
	defer stopLoad()
	var load, votes, waiting sync.WaitGroup
	for a := range opts.Agents {
		load.Add(1)
		go func() { defer load.Done(); r.agentLoop(loadCtx, a, &votes) }()
	}
	load.Add(1)
	go func() { defer load.Done(); r.faultLoop(loadCtx, ctx) }()
	load.Add(1)
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	go func() { defer load.Done(); r.waiterLoop(loadCtx, waitCtx, &votes, &waiting) }()
	load.Add(1)
	go func() { defer load.Done(); r.takeBackup(loadCtx) }()
	load.Wait()
	votes.Wait()
	r.waitCanaries()

	// Every replica serves again before the fleet drains.
	for _, rep := range r.fleet.replicas {
		if rep.url() == "" {
			if err := rep.restart(ctx, opts.Log); err != nil {
				return figs, err
			}
		}
	}
	opts.Log("load over after %s; draining", time.Since(r.started).Round(time.Second))
	drained := r.drain(ctx)
	// A waiting client has a little longer than the drain to hear.
	time.AfterFunc(waiterSlack, stopWaiting)
	waiting.Wait()
	opts.Log("drained; replaying pruned keys")
	r.replayPruned(ctx)
	opts.Log("counting")
	if figs, err = r.figures(ctx, drained); err != nil {
		return figs, err
	}
	if !figs.OK() {
		opts.Log("restore of the backup skipped: a figure already failed")
		return figs, nil
	}
	// As an operator restores: every replica stopped first.
	r.fleet.stop()
	opts.Log("restoring the backup into a fresh database")
	return figs, r.restoreCopy(ctx, s, &figs)
}

func configYAML(keyedURL, unkeyedURL, agentURL string) string {
	sum := sha256.Sum256([]byte(agentToken))
	return fmt.Sprintf(`slack: {channel: %s}
executor:
  dispatch_schedule: "@every 1s"
  reconcile_schedule: "@every 1s"
  expiry_schedule: "@every 5s"
  reminder_schedule: "@every 1s"
agents:
  - name: chaos-agent
    token_sha256: %s
    callback: {url: "%s/callback", secret: "chaos-callback-secret"}
retention: {requests: %s, schedule: "@every 1s"}
callbacks: {timeout: 1s, retry_base: 200ms, poll: 200ms}
tools:
  chaos.keyed:
    approvers: [%[5]s]
    approvals: 2
    dispatch: {url: "%[6]s/credits", timeout: 3s}
    key_aware: true
    max_attempts: 20
    claim_timeout: 5s
    remind_after: 2s
    reject_reason: off   # a reject click decides at once: the reason form is a modal the run does not fill
  chaos.unkeyed:
    approvers: [%[5]s]
    approvals: 2
    dispatch: {url: "%[7]s/credits", timeout: 2s}
    key_aware: false
    verify: {url: "%[7]s/objects?key={key}"}
    verify_after: 1s
    max_attempts: 20
    claim_timeout: 5s
    reject_reason: off
    remind_after: 2s
`, slackChannel, hex.EncodeToString(sum[:]), agentURL, retentionFor, strings.Join(approvers, ", "), keyedURL, unkeyedURL)
}

// agentLoop posts intents through random replicas until ctx ends: mostly
// valid ones (each then voted on), some poisoned, some replays of earlier
// ones.
func (r *run) agentLoop(ctx context.Context, agent int, votes *sync.WaitGroup) {
	for n := 0; ctx.Err() == nil; n++ {
		switch x := rand.Float64(); {
		case x < 0.08:
			r.postPoison(ctx, agent*100000+n)
		case x < 0.15:
			r.replayOne(ctx)
		default:
			tool := "chaos.keyed"
			if n%2 == 1 {
				tool = "chaos.unkeyed"
			}
			in := r.acknowledge(ctx, agentToken, validIntent(fmt.Sprintf("chaos-agent-%d", agent), n, tool), tool)
			if in == nil {
				continue
			}
			switch v := rand.Float64(); {
			case v < 0.8:
				in.Verdict = "approve"
				if tool == "chaos.keyed" && v < 0.04 {
					r.refuse(in.Key) // the provider will decline it: it must end failed
				}
				if tool == "chaos.unkeyed" && r.slowUnkeyed.Add(1)%10 == 1 {
					// Stored, then answered past the dispatch timeout: the
					// outcome is unknown and only the verify URL may settle it.
					r.unkeyed.SetFor(in.Key, sandbox.Behavior{Delay: slowPastTimeout, Times: 1})
				}
			case v < 0.9 || !r.leaveWaiting():
				in.Verdict = "reject"
			default:
				in.Verdict = "wait" // left pending: its card and reminder must reach Slack
			}
			votes.Add(1)
			go func() { defer votes.Done(); r.vote(in) }()
		}
		time.Sleep(time.Duration(20+rand.IntN(60)) * time.Millisecond)
	}
}

// maxWaiting bounds the intents left pending on purpose: each one's card
// and reminder must reach Slack by the end of the drain, at the one
// channel's post a second.
const maxWaiting = 12

// leaveWaiting reports whether one more intent may be left pending.
func (r *run) leaveWaiting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.waiting >= maxWaiting {
		return false
	}
	r.waiting++
	return true
}

// acknowledge posts body as the agent of token until a replica
// acknowledges it, moving to another replica when one dies or is down; nil
// when ctx ends first or it is refused.
func (r *run) acknowledge(ctx context.Context, token, body, tool string) *intent {
	for ctx.Err() == nil {
		base := r.fleet.pick()
		if base == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		r.flights[phaseIntake].n.Add(1)
		status, answer := post(base, token, body)
		r.flights[phaseIntake].n.Add(-1)
		r.answer("intake", status, answer)
		switch {
		case status == http.StatusCreated || status == http.StatusOK:
			in := &intent{Body: body, Tool: tool, Token: token}
			if json.Unmarshal(answer, in) != nil || in.ID == "" {
				r.fail(fmt.Errorf("an acknowledgement without an id: %s", compact(answer)))
				return nil
			}
			r.mu.Lock()
			r.intents = append(r.intents, in)
			r.mu.Unlock()
			return in
		case status == 0 || status >= 500:
			time.Sleep(50 * time.Millisecond) // a dying replica or a restarting database
		default:
			r.fail(fmt.Errorf("a valid intent was refused %d: %s", status, compact(answer)))
			return nil
		}
	}
	return nil
}

// postPoison sends one poisoned intent and records its answer.
func (r *run) postPoison(ctx context.Context, n int) {
	kinds := make([]string, 0, len(poisons))
	for k := range poisons {
		kinds = append(kinds, k)
	}
	kind := kinds[rand.IntN(len(kinds))]
	for ctx.Err() == nil {
		base := r.fleet.pick()
		if base == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		status, answer := post(base, agentToken, poisons[kind](n))
		r.answer("poison", status, answer)
		if status == 0 || status >= 500 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		r.mu.Lock()
		if r.poisoned[kind] == nil {
			r.poisoned[kind] = map[string]int{}
		}
		r.poisoned[kind][fmt.Sprintf("%d %s", status, errorCode(answer))]++
		if status < 300 {
			r.stored++
		}
		r.mu.Unlock()
		return
	}
}

// replayOne sends an acknowledged intent again, as an agent retrying does;
// once pruned, its key must answer 410 and never run again.
func (r *run) replayOne(ctx context.Context) {
	r.mu.Lock()
	if len(r.intents) == 0 {
		r.mu.Unlock()
		return
	}
	in := r.intents[rand.IntN(len(r.intents))]
	r.mu.Unlock()
	if base := r.fleet.pick(); base != "" {
		status, answer := post(base, in.Token, in.Body)
		r.answer("replay", status, answer)
		r.mu.Lock()
		r.replays[fmt.Sprint(status)]++
		r.mu.Unlock()
	}
}

// vote decides an intent as its verdict says: two approvers click at once
// on two replicas, and one of them clicks again on another (a duplicate);
// a reject is one click.
func (r *run) vote(in *intent) {
	switch in.Verdict {
	case "approve":
		pair := rand.Perm(len(approvers))[:2]
		var wg sync.WaitGroup
		for i, u := range []string{approvers[pair[0]], approvers[pair[1]], approvers[pair[0]]} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i == 2 {
					time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
				}
				r.click(in, u, "approve")
			}()
		}
		wg.Wait()
	case "reject":
		r.click(in, approvers[rand.IntN(len(approvers))], "reject")
	}
}

// click presses a card button until the vote is recorded: a click on a
// replica that dies meanwhile, or one answered "could not record, try
// again" (Slack still gets its 200), is pressed again, as a person would.
func (r *run) click(in *intent, user, action string) {
	value, _ := json.Marshal(map[string]any{"r": in.ID, "n": 1, "h": in.PayloadHash})
	body := fakeslack.ClickForm(fakeslack.ClickPayload(user, cmp.Or(in.Channel, slackChannel), action, string(value)))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		base := r.fleet.pick()
		if base == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		req, _ := http.NewRequest(http.MethodPost, base+"/slack/interactions", strings.NewReader(string(body)))
		req.Header = fakeslack.Sign(slackSecret, time.Now(), body)
		r.flights[phaseVoting].n.Add(1)
		resp, err := httpClient.Do(req)
		r.flights[phaseVoting].n.Add(-1)
		if err != nil {
			r.answer("click", 0, nil)
		}
		if err == nil {
			answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			r.answer("click", resp.StatusCode, answer)
			if resp.StatusCode == http.StatusOK {
				if r.recorded(in, user) {
					return
				}
				r.reclicks.Add(1)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.fail(fmt.Errorf("%s's %s of %s was never answered 200", user, action, in.Key))
}

// recorded reports whether user's vote on in is recorded, or the request
// is decided or expired (a later click changes nothing) or pruned since.
func (r *run) recorded(in *intent, user string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ok bool
	err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM votes WHERE request_id = $1 AND voter = $2)
		OR EXISTS (SELECT 1 FROM decisions WHERE request_id = $1)
		OR EXISTS (SELECT 1 FROM requests WHERE id = $1 AND status = 'expired')
		OR EXISTS (SELECT 1 FROM tombstones WHERE key = $3)`, in.ID, user, in.Key).Scan(&ok)
	return err == nil && ok
}
