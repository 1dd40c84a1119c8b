package main

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/countersign/countersign/bot/fakeslack"
	"github.com/countersign/countersign/sandbox"
)

// builds holds the binaries built by this process, by build tags: runs
// of one process (the mutants, the tests) build each once.
var builds struct {
	sync.Mutex
	dir   string
	paths map[string]string
}

// buildCountersign builds this tree's countersign with tags (none: the
// release build), once per process.
func buildCountersign(tags string) (string, error) {
	builds.Lock()
	defer builds.Unlock()
	if p, ok := builds.paths[tags]; ok {
		return p, nil
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "chaos-build-")
		if err != nil {
			return "", err
		}
		builds.dir, builds.paths = dir, map[string]string{}
	}
	path := filepath.Join(builds.dir, "countersign-"+cmp.Or(tags, "release"))
	args := []string{"build", "-o", path}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	out, err := exec.Command("go", append(args, "github.com/countersign/countersign/cmd/countersign")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	builds.paths[tags] = path
	return path, nil
}

// removeBuilds removes what buildCountersign built.
func removeBuilds() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
		builds.dir, builds.paths = "", nil
	}
}

// startFleet builds countersign from this tree and starts n replicas of
// it on a fresh database, with the fake Slack, the two sandbox providers
// and the agent's callback endpoint they talk to; config writes the
// configuration file from those three URLs. Everything it starts ends
// when s closes.
func (r *run) startFleet(ctx context.Context, s *scope, n int, config func(keyedURL, unkeyedURL, agentURL string) string) error {
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		return err
	}
	s.Cleanup(func() { os.RemoveAll(dir) })
	r.opts.Log("building countersign")
	tags := ""
	if r.opts.Mutant != "" {
		tags = "chaosmutant"
	}
	binary, err := buildCountersign(tags)
	if err != nil {
		return err
	}
	r.dir, r.binary = dir, binary
	r.opts.Log("creating the database")
	// An empty database: `migrate --app-role` (prepareRole) migrates it.
	dbURL, err := s.scratchDatabase(ctx)
	if err != nil {
		return err
	}
	if r.db, err = pgxpool.New(ctx, dbURL); err != nil {
		return err
	}
	s.Cleanup(r.db.Close)
	r.ownerURL = dbURL
	// The fleet connects as a role of the run's own, prepared as an
	// operator would (migrate --app-role): the connection-limit fault
	// changes that role alone.
	if dbURL, err = r.prepareRole(ctx, s, binary, dbURL); err != nil {
		return err
	}
	r.slack = fakeslack.Start()
	s.Cleanup(r.slack.Close)
	r.keyed, r.unkeyed = sandbox.New(), sandbox.New()
	r.keyed.Secret, r.unkeyed.Secret = []byte(dispatchSecret), []byte(dispatchSecret)
	r.keyedLog, r.unkeyedLog = &writeLog{}, &writeLog{}
	keyedURL := serveProvider(s, r.keyed, r.flights[phaseDispatch], r.keyedLog)
	unkeyedURL := serveProvider(s, r.unkeyed, r.flights[phaseDispatch], r.unkeyedLog)
	var agentURL string
	r.agent, agentURL = newAgentEndpoint(s, 0.25)
	r.flights[phaseCallback] = &r.agent.flight

	path := filepath.Join(dir, "countersign.yml")
	if err := os.WriteFile(path, []byte(config(keyedURL, unkeyedURL, agentURL)), 0o600); err != nil {
		return err
	}
	r.rewriteConfig = func(change func(string) string) error {
		return os.WriteFile(path, []byte(change(config(keyedURL, unkeyedURL, agentURL))), 0o600)
	}
	// Three replicas at serve's default pool of 20 would hold up to 60 of
	// a server's connections, which make test shares with packages
	// running beside this one; the load needs far fewer.
	replicaURL, err := withPoolSize(dbURL, replicaPoolSize)
	if err != nil {
		return err
	}
	env := []string{"COUNTERSIGN_DATABASE_URL=" + replicaURL, "COUNTERSIGN_CONFIG=" + path,
		"COUNTERSIGN_DISPATCH_SECRET=" + dispatchSecret, "SLACK_BOT_TOKEN=xoxb-chaos",
		"SLACK_SIGNING_SECRET=" + slackSecret, "COUNTERSIGN_SLACK_API_URL=" + r.slack.URL() + "/",
		"COUNTERSIGN_INBOX=off", "COUNTERSIGN_LISTEN=127.0.0.1:0"}
	if r.opts.Mutant != "" {
		env = append(env, mutantEnv+"="+r.opts.Mutant)
	}
	r.replicaEnv = env
	f := &fleet{}
	r.fleet = f
	s.Cleanup(f.stop)
	starting := make(chan error, n)
	for i := range n {
		rep := &replica{name: fmt.Sprintf("replica-%d", i+1), binary: binary, env: env}
		r.fleet.replicas = append(r.fleet.replicas, rep)
		go func() { starting <- rep.start(ctx) }()
	}
	for range n {
		if err := <-starting; err != nil {
			return err
		}
	}
	return nil
}

// replica is one `countersign serve` slot of the fleet: killed and started
// again many times, each time on a new loopback port.
type replica struct {
	name   string
	binary string
	env    []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	base  string // http://127.0.0.1:port while it serves; "" while it is down
	lines []string
	// refusals are the log lines of clicks refused for a reason of the
	// server's own (the database), the first few.
	refusals []string
	since    time.Time // when it last started listening
	reloads  int       // "configuration reloaded" lines, over all its lives
}

var listening = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// start runs serve and waits until it listens.
func (r *replica) start(ctx context.Context) error {
	cmd := exec.Command(r.binary, "serve")
	cmd.Env = append(os.Environ(), r.env...)
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	addr := make(chan string, 1)
	exited := make(chan struct{}) // the output ended: the process is gone
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			// The last lines only: enough to explain a failure.
			if r.lines = append(r.lines, line); len(r.lines) > 200 {
				r.lines = r.lines[len(r.lines)-200:]
			}
			if strings.Contains(line, `"msg":"recording a decision`) && len(r.refusals) < 3 {
				r.refusals = append(r.refusals, line)
			}
			if strings.Contains(line, `"msg":"configuration reloaded"`) {
				r.reloads++
			}
			r.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		r.mu.Lock()
		r.cmd, r.base, r.since = cmd, "http://"+a, time.Now()
		r.mu.Unlock()
		return nil
	case <-exited:
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return fmt.Errorf("%s did not start listening:\n%s", r.name, r.tail())
}

// restartAttempts is how often a supervisor starts a replica that failed
// to start before giving up.
const restartAttempts = 4

// restart starts the replica again as a supervisor would: a start that
// fails (on a loaded machine, a replica can take longer than its 30 s to
// listen; while the database refuses the fleet's role, serve exits at
// once) is tried again after a pause growing by a second each time, up to
// restartAttempts times; log hears of each failure.
func (r *replica) restart(ctx context.Context, log func(string, ...any)) error {
	var err error
	for i := 1; i <= restartAttempts && ctx.Err() == nil; i++ {
		if i > 1 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(i-1) * time.Second):
			}
		}
		if err = r.start(ctx); err == nil {
			return nil
		}
		log("%s failed to start (attempt %d of %d): %s", r.name, i, restartAttempts, firstLine(err.Error()))
	}
	return err
}

// hangUp sends SIGHUP to a replica that has served for at least a second
// (serve installs its SIGHUP handler just after it starts listening), and
// returns how many reloads it had logged before; ok is false when it was
// not sent.
func (r *replica) hangUp() (before hup, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || time.Since(r.since) < time.Second {
		return hup{}, false
	}
	return hup{r.reloads, r.cmd}, r.cmd.Process.Signal(syscall.SIGHUP) == nil
}

// hup is the replica as a SIGHUP found it: its reloads so far, and which
// process it was.
type hup struct {
	reloads int
	cmd     *exec.Cmd
}

// reloaded reports whether the replica logged a reload since it had
// logged before, and whether it is still the process that was signalled
// (a kill meanwhile makes the question moot).
func (r *replica) reloaded(before hup) (done, alive bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloads > before.reloads, r.cmd == before.cmd
}

// kill sends SIGKILL: nothing in the process gets to clean up.
func (r *replica) kill() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd, r.base = nil, ""
	r.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// stop ends the process with SIGTERM, as at the end of the run.
func (r *replica) stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd, r.base = nil, ""
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (r *replica) url() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base
}

func (r *replica) refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

func (r *replica) tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s string
	for _, l := range r.lines[max(0, len(r.lines)-30):] {
		s += l + "\n"
	}
	return s
}

// fleet is the replicas on one database.
type fleet struct{ replicas []*replica }

// stop stops every replica at once, each with SIGTERM: each finishes
// what it holds, then exits.
func (f *fleet) stop() {
	var wg sync.WaitGroup
	for _, r := range f.replicas {
		wg.Add(1)
		go func() { defer wg.Done(); r.stop() }()
	}
	wg.Wait()
}

// pick returns the base URL of a random replica that is serving, or "" when
// none is.
func (f *fleet) pick() string {
	var up []string
	for _, r := range f.replicas {
		if u := r.url(); u != "" {
			up = append(up, u)
		}
	}
	if len(up) == 0 {
		return ""
	}
	return up[rand.IntN(len(up))]
}

// replicaPoolSize is each replica's pool_max_conns.
const replicaPoolSize = 10

// withPoolSize sets pool_max_conns on a database URL.
func withPoolSize(dbURL string, size int) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", fmt.Errorf("parsing the database URL: %w", err)
	}
	q := u.Query()
	q.Set("pool_max_conns", strconv.Itoa(size))
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// prepareRole runs `countersign migrate --app-role` on the run's database
// for a role named after it, which s drops at the end (with what it was
// granted there), and returns dbURL as that role.
func (r *run) prepareRole(ctx context.Context, s *scope, binary, dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	r.role = "chaos_" + strings.TrimPrefix(u.Path, "/")
	cmd := exec.CommandContext(ctx, binary, "migrate", "--app-role", r.role)
	cmd.Env = append(os.Environ(), "COUNTERSIGN_DATABASE_URL="+dbURL)
	out, err := cmd.CombinedOutput()
	s.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		role := pgx.Identifier{r.role}.Sanitize()
		// DROP OWNED revokes what the role was granted in this database
		// (it owns nothing), so that it can be dropped.
		if _, err := r.db.Exec(ctx, "DROP OWNED BY "+role); err != nil {
			r.opts.Log("dropping the run's role %s: %v", r.role, err)
			return
		}
		if _, err := r.db.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			r.opts.Log("dropping the run's role %s: %v", r.role, err)
		}
	})
	if err != nil {
		return "", fmt.Errorf("countersign migrate --app-role %s: %v\n%s", r.role, err, out)
	}
	u.User = url.User(r.role)
	return u.String(), nil
}
