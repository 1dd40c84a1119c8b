// Command waitbench measures what waiting agents cost: it starts a real
// `countersign serve` on a scratch PostgreSQL database, seeds N pending
// requests through the hook, and holds one long-poll
// (GET /v1/requests/{id}?wait=60s) on each from this process. It reports
// serve's resident memory and Go heap and stacks before and with the
// waiters (and per waiter), serve's CPU and its database's commits over a
// window in which nothing changes (without waiters, then with them), and
// then cancels a sample of the requests one at a time and reports how soon
// each one's waiter is answered.
//
//	go run ./cmd/waitbench -waiters 10000
//
// Everything is on loopback. The open-file limit is raised to its hard
// limit first: each waiter is a socket here and one in serve.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/cmd/internal/benchserve"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// options are waitbench's sizes.
type options struct {
	adminURL, serveBin string
	waiters, changes   int
	wait, idle         time.Duration
	serverEnv          []string
}

// run is main with its clean-up (serve, the scratch database) kept on
// errors; the smoke test calls it with tiny sizes.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("waitbench", flag.ContinueOnError)
	var o options
	flags.StringVar(&o.adminURL, "database-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "PostgreSQL server (a scratch database is created on it and dropped at the end)")
	flags.IntVar(&o.waiters, "waiters", 10000, "concurrent long-polls, one per seeded request")
	flags.IntVar(&o.changes, "changes", 200, "requests cancelled one at a time, to time their waiters' wake-ups")
	flags.DurationVar(&o.wait, "wait", 60*time.Second, "each long-poll's ?wait=")
	flags.DurationVar(&o.idle, "idle", 20*time.Second, "length of each window in which nothing changes")
	flags.StringVar(&o.serveBin, "serve-bin", "", "a countersign binary to measure (one built from an earlier commit, say) instead of this tree's")
	flags.Func("server-env", "NAME=VALUE added to serve's environment (repeatable), such as GOGC=50", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("want NAME=VALUE, got %q", v)
		}
		o.serverEnv = append(o.serverEnv, v)
		return nil
	})
	if err := flags.Parse(args); err != nil {
		return err
	}
	if o.changes > o.waiters {
		o.changes = o.waiters
	}
	if err := raiseOpenFiles(o.waiters); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "waitbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.serveBin
	if bin == "" {
		if bin, err = benchserve.Build(ctx, dir); err != nil {
			return err
		}
	}
	dbURL, drop, err := benchserve.ScratchDatabase(ctx, o.adminURL, "waitbench")
	if err != nil {
		return err
	}
	defer drop()
	s, stop, err := benchserve.StartServe(ctx, bin, dir, dbURL, o.serverEnv)
	if err != nil {
		return err
	}
	defer stop()
	admin, err := pgx.Connect(ctx, o.adminURL)
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())

	ids, err := seed(s, o.waiters)
	if err != nil {
		return err
	}
	fig, err := measure(ctx, s, admin, ids, o)
	if err != nil {
		return err
	}
	fig.print(stdout, o)
	return nil
}

// figures are what one run measured.
type figures struct {
	before, with             snapshot
	withLater                snapshot // with the waiters, after their quiet window
	idleCPU, idleCPUWith     time.Duration
	idleXacts, idleXactsWith int64
	idle                     time.Duration
	early                    int // waiters answered while nothing changed
	fromSent, fromAnswer     []time.Duration
}

// snapshot is serve's memory at one moment.
type snapshot struct {
	rss                     int64
	heap, stacks, goroutine float64
	// parked is countersign_long_polls_parked: waiters with no goroutine.
	parked float64
}

func (f figures) print(w io.Writer, o options) {
	n := float64(o.waiters)
	per := func(before, with float64) string { return fmt.Sprintf("%.1f KB", (with-before)/n/1000) }
	mib := func(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
	core := func(d time.Duration) string { return fmt.Sprintf("%.2f %%", 100*d.Seconds()/f.idle.Seconds()) }
	rate := func(x int64) string { return fmt.Sprintf("%d (%.2f/s)", x, float64(x)/f.idle.Seconds()) }
	fmt.Fprintf(w, "%d long-polls (?wait=%s) on one serve, PostgreSQL; windows of %s with nothing changing\n\n", o.waiters, o.wait, f.idle)
	fmt.Fprintf(w, "| | before the waiters | with the waiters | per waiter |\n|---|---|---|---|\n")
	fmt.Fprintf(w, "| serve RSS | %s | %s | %s |\n", mib(float64(f.before.rss)), mib(float64(f.with.rss)), per(float64(f.before.rss), float64(f.with.rss)))
	fmt.Fprintf(w, "| Go heap in use | %s | %s | %s |\n", mib(f.before.heap), mib(f.with.heap), per(f.before.heap, f.with.heap))
	fmt.Fprintf(w, "| serve RSS %s later | | %s | %s |\n", statsLag-settle+f.idle, mib(float64(f.withLater.rss)), per(float64(f.before.rss), float64(f.withLater.rss)))
	fmt.Fprintf(w, "| goroutine stacks | %s | %s | %s |\n", mib(f.before.stacks), mib(f.with.stacks), per(f.before.stacks, f.with.stacks))
	fmt.Fprintf(w, "| goroutines | %.0f | %.0f | %.2f |\n", f.before.goroutine, f.with.goroutine, (f.with.goroutine-f.before.goroutine)/n)
	fmt.Fprintf(w, "| parked long-polls (no goroutine) | %.0f | %.0f | |\n", f.before.parked, f.with.parked)
	fmt.Fprintf(w, "| serve CPU while nothing changes (of one core) | %s | %s | |\n", core(f.idleCPU), core(f.idleCPUWith))
	fmt.Fprintf(w, "| database commits while nothing changes | %s | %s | |\n\n", rate(f.idleXacts), rate(f.idleXactsWith))
	fmt.Fprintf(w, "waiters answered while nothing changed: %d\n", f.early)
	fmt.Fprintf(w, "wake-up of %d cancelled requests' waiters: from the cancel's answer p50 %s p99 %s max %s; from its sending p50 %s p99 %s\n",
		len(f.fromAnswer), benchserve.Pct(f.fromAnswer, .5), benchserve.Pct(f.fromAnswer, .99), benchserve.Pct(f.fromAnswer, 1),
		benchserve.Pct(f.fromSent, .5), benchserve.Pct(f.fromSent, .99))
}

// raiseOpenFiles lifts the soft open-file limit to the hard one, and fails
// when even that cannot hold n waiters.
func raiseOpenFiles(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if need := uint64(n) + 256; lim.Cur < need {
		return fmt.Errorf("the open-file limit is %d; %d waiters need about %d", lim.Cur, n, need)
	}
	return nil
}

// seed posts n intents from 16 clients and returns their request ids.
func seed(s benchserve.Server, n int) ([]string, error) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer hc.CloseIdleConnections()
	ids := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				body := fmt.Sprintf(`{"run_id":"waitbench-%d","step":1,"tool":%q,"effect":{"invoice":"inv_%d","amount_cents":4200,"currency":"USD"},"summary":"waitbench"}`,
					i, benchserve.Tool, i)
				status, resp, err := call(hc, http.MethodPost, "http://"+s.Addr+"/v1/requests", body)
				if err == nil && status != http.StatusCreated {
					err = fmt.Errorf("intake answered %d: %s", status, resp)
				}
				var v view
				if err == nil {
					err = json.Unmarshal(resp, &v)
				}
				if err != nil {
					errs <- fmt.Errorf("seeding: %w", err)
					return
				}
				ids[i] = v.ID
			}
		}()
	}
	wg.Wait()
	close(errs)
	return ids, <-errs
}

// view is the part of a request's representation waitbench reads.
type view struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Version int64  `json:"version"`
}

// call sends one agent request and returns the status and body.
func call(hc *http.Client, method, url, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchserve.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// answer is what a waiter got back, and when.
type answer struct {
	at     time.Time
	status int
	view   view
	err    error
}

// waiter is one long-poll held open on its own connection.
type waiter struct {
	id       string
	answered chan answer // gets the one answer
}

// open dials serve and sends the long-poll; a goroutine reads its answer.
func open(addr, id string, wait time.Duration) (*waiter, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	req := fmt.Sprintf("GET /v1/requests/%s?wait=%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n",
		id, wait, addr, benchserve.Token)
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	w := &waiter{id: id, answered: make(chan answer, 1)}
	go func() {
		defer conn.Close()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		a := answer{at: time.Now(), err: err}
		if err == nil {
			a.status = resp.StatusCode
			var body []byte
			if body, a.err = io.ReadAll(resp.Body); a.err == nil {
				a.err = json.Unmarshal(body, &a.view)
			}
			resp.Body.Close()
		}
		w.answered <- a
	}()
	return w, nil
}

// metrics reads serve's /metrics as name{labels} -> value.
func metrics(addr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := make(map[string]float64)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// take reads serve's memory now.
func take(s benchserve.Server) (snapshot, error) {
	m, err := metrics(s.Addr)
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{rss: benchserve.Memory(s.PID, "VmRSS"), heap: m["go_memstats_heap_inuse_bytes"],
		stacks: m["go_memstats_stack_inuse_bytes"], goroutine: m["go_goroutines"], parked: m["countersign_long_polls_parked"]}, nil
}

// commits reads the database's committed transactions so far. Backends
// report them within a second or so of going idle, so a window's two
// readings lag alike.
func commits(ctx context.Context, admin *pgx.Conn, database string) (int64, error) {
	var n int64
	err := admin.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, database).Scan(&n)
	return n, err
}

// statsLag is how long PostgreSQL may hold a backend's counts before it
// reports them (an idle backend reports within ten seconds): a window of
// commits starts this long after the last burst of work, so none of the
// burst is counted in it.
const statsLag = 11 * time.Second

// quiet measures serve's CPU time and its database's commits over a window
// in which this process changes nothing.
func quiet(ctx context.Context, s benchserve.Server, admin *pgx.Conn, d time.Duration) (time.Duration, int64, error) {
	time.Sleep(statsLag - settle) // counts of the work before the window arrive first
	x0, err := commits(ctx, admin, s.Database)
	if err != nil {
		return 0, 0, err
	}
	c0 := benchserve.CPUTime(s.PID)
	time.Sleep(d) // the measured window's length, not a wait for an event
	c1 := benchserve.CPUTime(s.PID)
	x1, err := commits(ctx, admin, s.Database)
	return c1 - c0, x1 - x0, err
}

// settle is how long serve is left alone before its memory is read.
const settle = 3 * time.Second

func measure(ctx context.Context, s benchserve.Server, admin *pgx.Conn, ids []string, o options) (figures, error) {
	var f figures
	f.idle = o.idle
	time.Sleep(settle) // let the seeding's garbage and writes pass
	var err error
	if f.before, err = take(s); err != nil {
		return f, err
	}
	if f.idleCPU, f.idleXacts, err = quiet(ctx, s, admin, o.idle); err != nil {
		return f, err
	}

	// Dial a few hundred at a time: the listen backlog drops what it
	// cannot queue, and a dropped SYN costs a second.
	waiters := make([]*waiter, len(ids))
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	var openErr error
	var once sync.Once
	for i, id := range ids {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			w, err := open(s.Addr, id, o.wait)
			if err != nil {
				once.Do(func() { openErr = fmt.Errorf("opening waiter %d: %w", i, err) })
				return
			}
			waiters[i] = w
		}()
	}
	wg.Wait()
	if openErr != nil {
		return f, openErr
	}
	opened := time.Now()
	if err := waitForWaiters(s, f.before.goroutine, len(ids)); err != nil {
		return f, err
	}
	time.Sleep(settle) // the last waiters' first reads finish
	if f.with, err = take(s); err != nil {
		return f, err
	}
	if f.idleCPUWith, f.idleXactsWith, err = quiet(ctx, s, admin, o.idle); err != nil {
		return f, err
	}
	if f.withLater, err = take(s); err != nil {
		return f, err
	}
	for _, w := range waiters {
		select {
		case a := <-w.answered:
			f.early++
			w.answered <- a
		default:
		}
	}
	if f.early > 0 {
		return f, fmt.Errorf("%d waiters were answered while nothing changed (the first after %s)", f.early, firstAnswer(waiters).Sub(opened))
	}

	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	// The waiters opened last have the most of their wait left.
	for _, w := range waiters[len(waiters)-o.changes:] {
		sent := time.Now()
		status, body, err := call(hc, http.MethodPost, "http://"+s.Addr+"/v1/requests/"+w.id+"/cancel", "")
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("cancel answered %d: %s", status, body)
		}
		if err != nil {
			return f, err
		}
		done := time.Now()
		select {
		case a := <-w.answered:
			if a.at.Before(sent) {
				return f, fmt.Errorf("a waiter reached its deadline (?wait=%s) before its change was sent: the run took too long", o.wait)
			}
			if a.err != nil || a.status != http.StatusOK || a.view.Status != "cancelled" {
				return f, fmt.Errorf("the waiter on a cancelled request got %d %+v, %v", a.status, a.view, a.err)
			}
			f.fromSent = append(f.fromSent, a.at.Sub(sent))
			f.fromAnswer = append(f.fromAnswer, max(0, a.at.Sub(done)))
		case <-time.After(5 * time.Second):
			return f, fmt.Errorf("the waiter on cancelled request %s was not answered within 5s", w.id)
		}
	}
	return f, nil
}

// firstAnswer is when the earliest answered waiter got its answer.
func firstAnswer(ws []*waiter) time.Time {
	var first time.Time
	for _, w := range ws {
		select {
		case a := <-w.answered:
			if first.IsZero() || a.at.Before(first) {
				first = a.at
			}
			w.answered <- a
		default:
		}
	}
	return first
}

// waitForWaiters polls serve's metrics until n long-polls wait: the gauge
// countersign_long_polls_waiting where serve has it, else n goroutines more
// than before (one per connection, at least).
func waitForWaiters(s benchserve.Server, goroutinesBefore float64, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m, err := metrics(s.Addr)
		if err != nil {
			return err
		}
		waiting, ok := m["countersign_long_polls_waiting"]
		if (ok && waiting >= float64(n)) || (!ok && m["go_goroutines"] >= goroutinesBefore+float64(n)) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the waiters were not all waiting after 2 minutes")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
