package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// shutdownRuns repeats each case of
// TestSIGTERMWhileTheProviderProcessHoldsTheSend: once in the normal suite,
// more for a hunt:
//
//	go test ./cmd/countersign -run TestSIGTERMWhileTheProviderProcessHoldsTheSend -shutdown.runs=20
var shutdownRuns = flag.Int("shutdown.runs", 1, "times each SIGTERM-from-outside case is played")

// providerHold is how long the fake provider holds each write.
const providerHold = 3 * time.Second

// fakeProvider is cmd/fakeprovider, built once for the tests that run it
// (TestMain removes it).
var fakeProvider struct {
	once sync.Once
	path string
	err  error
}

// providerProcess is cmd/fakeprovider in a process of its own, holding each
// write for providerHold.
type providerProcess struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when it has exited
	// received is what it said it had received when it stopped, or -1.
	received int
}

func startProviderProcess(t *testing.T) *providerProcess {
	t.Helper()
	fakeProvider.once.Do(func() {
		dir, err := os.MkdirTemp("", "fakeprovider-bin-")
		if err != nil {
			fakeProvider.err = err
			return
		}
		fakeProvider.path = filepath.Join(dir, "fakeprovider")
		if out, err := exec.Command("go", "build", "-o", fakeProvider.path, "github.com/countersign/countersign/cmd/fakeprovider").CombinedOutput(); err != nil {
			fakeProvider.err = fmt.Errorf("building fakeprovider: %v\n%s", err, out)
		}
	})
	if fakeProvider.err != nil {
		t.Fatal(fakeProvider.err)
	}
	cmd := exec.Command(fakeProvider.path, "-listen", "127.0.0.1:0", "-secret", smokeSecret, "-delay", providerHold.String())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &providerProcess{cmd: cmd, done: make(chan struct{}), received: -1}
	listening := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			if _, addr, ok := strings.Cut(scanner.Text(), "fake provider on "); ok {
				listening <- addr
			}
			if _, counts, ok := strings.Cut(scanner.Text(), "stopped: "); ok {
				_, _ = fmt.Sscanf(counts, "%d writes received", &p.received)
			}
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	select {
	case p.url = <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("the fake provider never listened")
	}
	return p
}

// stop ends the provider and waits for it.
func (p *providerProcess) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// writes is how many writes the provider received under key, or -1 when it
// cannot say.
func (p *providerProcess) writes(key string) int {
	resp, err := http.Get(p.url + "/writes?key=" + url.QueryEscape(key))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var got struct {
		Writes int `json:"writes"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&got) != nil {
		return -1
	}
	return got.Writes
}

// holds reports whether the provider has stored the write under key, which
// it then holds for providerHold.
func (p *providerProcess) holds(key string) bool {
	resp, err := http.Get(p.url + "/objects?key=" + url.QueryEscape(key))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// shutdownCase is a store, the way a reviewer approves, and who gets the
// signal.
type shutdownCase struct {
	name     string
	postgres bool
	inbox    bool // the local review inbox; else a signed Slack click
	// group: the provider is signalled too, as when both run in one process
	// group (make run, a script's kill 0); else serve's pid alone.
	group bool
	// logsGone: what reads serve's log dies with the signal, as a
	// `countersign serve | jq` in the same group does, and serve drains
	// first, logging that it does.
	logsGone bool
}

// TestSIGTERMWhileTheProviderProcessHoldsTheSend plays the shutdown
// choreography entirely from outside, as an operator sees it: serve and
// cmd/fakeprovider are processes of their own, a reviewer approves (a Slack
// click or the review inbox), the provider holds the POST for 3s, and serve
// gets SIGTERM while it does, alone or with the provider. On either store,
// serve must wait for the answer and record it: the tool can be neither
// verified nor resent, so an outcome lost here would be left to a human.
func TestSIGTERMWhileTheProviderProcessHoldsTheSend(t *testing.T) {
	t.Parallel()
	for _, c := range []shutdownCase{
		{name: "postgres/slack", postgres: true},
		{name: "embedded/inbox", inbox: true},
		{name: "postgres/slack/group", postgres: true, group: true},
		{name: "embedded/inbox/group", inbox: true, group: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for run := range *shutdownRuns {
				if err := sigtermWhileHeld(t, c, run); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
			}
		})
	}
}

// sigtermWhileHeld is one run of TestSIGTERMWhileTheProviderProcessHoldsTheSend.
func sigtermWhileHeld(t *testing.T, c shutdownCase, run int) error {
	provider := startProviderProcess(t)
	defer provider.stop()
	sum := sha256.Sum256([]byte(smokeToken))
	cfg := writeConfig(t, fmt.Sprintf(`
slack: {channel: C0BILLING}
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U1, "local:reviewer"]
    dispatch: {url: "%s/credits", timeout: 10s}
    key_aware: false
`, hex.EncodeToString(sum[:]), provider.url))
	env := map[string]string{
		"COUNTERSIGN_CONFIG": cfg, "COUNTERSIGN_DISPATCH_SECRET": smokeSecret, "COUNTERSIGN_LISTEN": "127.0.0.1:0",
		"COUNTERSIGN_DATA_DIR": t.TempDir(), "COUNTERSIGN_DATABASE_URL": "",
	}
	var dbURL string
	if c.postgres {
		dbURL = storetest.NewURL(t)
		env["COUNTERSIGN_DATABASE_URL"] = dbURL
	}
	if c.logsGone {
		env["COUNTERSIGN_DRAIN_DELAY"] = "1s"
	}
	if c.inbox {
		env["COUNTERSIGN_INBOX"], env["COUNTERSIGN_INBOX_REVIEWER"] = "on", "local:reviewer"
	} else {
		fake := bottest.New(t)
		env["SLACK_BOT_TOKEN"], env["SLACK_SIGNING_SECRET"] = "xoxb-test", quorumSlackSecret
		env["COUNTERSIGN_SLACK_API_URL"], env["COUNTERSIGN_INBOX"] = fake.URL()+"/", "off"
	}
	p := startServeProcess(t, env)
	req := postIntent(t, p.base, fmt.Sprintf(
		`{"run_id":"r-term-%d","step":1,"tool":"billing.credit","effect":{"invoice":"inv_t","amount_cents":700,"currency":"EUR"},"summary":"Credit 7.00 EUR"}`, run))
	approved := time.Now()
	if c.inbox {
		client := newBrowserClient()
		enterInbox(t, client, inboxEntry(t, p.logs))
		form := url.Values{"request_id": {req.ID}, "round": {"1"}, "payload_hash": {req.PayloadHash}, "verdict": {"approve"}}
		if code, page := caller(t, client, p.base)(http.MethodPost, "/inbox/decide", form.Encode(),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); code != http.StatusSeeOther {
			return fmt.Errorf("approving in the inbox = %d:\n%s", code, page)
		}
	} else if code := clickAt(t, p.base, "U1", "approve", req); code != http.StatusOK {
		return fmt.Errorf("click answered %d", code)
	}
	for deadline := time.Now().Add(30 * time.Second); !provider.holds(req.Key); { // a loaded machine is slow, not wrong
		if time.Now().After(deadline) {
			return fmt.Errorf("the provider never received the write:\n%s", p.logs.String())
		}
		time.Sleep(5 * time.Millisecond) // polling the verify URL, not waiting for an event
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if c.logsGone {
		p.stderr.Close()
	}
	if c.group {
		if err := provider.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return err
		}
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("serve exited with %v:\n%s", err, p.logs.String())
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("serve did not stop on SIGTERM:\n%s", p.logs.String())
	}
	took := time.Since(approved)
	e, err := latestExecution(dbURL, env["COUNTERSIGN_DATA_DIR"], req.ID)
	if err != nil {
		return err
	}
	code := ""
	if e.LastCode != nil {
		code = *e.LastCode
	}
	switch {
	case took < providerHold:
		return fmt.Errorf("serve exited %v after the approval, before the provider answered; the execution is %s (%s):\n%s",
			took.Round(time.Millisecond), e.State, code, p.logs.String())
	case e.State != store.ExecSucceeded:
		return fmt.Errorf("the execution is %s (%s), want succeeded:\n%s", e.State, code, p.logs.String())
	}
	if c.group {
		// The provider stopped with serve, and said what it had received:
		// this run's write and nothing else.
		<-provider.done
		if provider.received != 1 {
			return fmt.Errorf("the provider received %d writes, want 1", provider.received)
		}
	} else if n := provider.writes(req.Key); n != 1 {
		return fmt.Errorf("the provider received %d writes under the key, want 1", n)
	}
	return nil
}

// loadRuns is how many times each case of
// TestSIGTERMUnderLoadFinishesEverySendInFlight is played: three times in the
// suite, more by hand:
//
//	go test ./cmd/countersign -run TestSIGTERMUnderLoadFinishesEverySendInFlight -shutdown.load-runs=25
var loadRuns = flag.Int("shutdown.load-runs", 3, "times each SIGTERM-under-load case is played")

// TestSIGTERMUnderLoadFinishesEverySendInFlight plays the choreography of
// TestSIGTERMWhileTheProviderProcessHoldsTheSend on a machine kept busy the
// whole time: processes spinning on every core and a writer syncing to disk
// beside them, as on a machine that is still working through a heavy load.
// Every run, on either store, alone, with the provider signalled too, or
// with its log's reader gone, must end succeeded with exactly one write at
// the provider, serve waiting for its answer.
func TestSIGTERMUnderLoadFinishesEverySendInFlight(t *testing.T) {
	t.Parallel()
	loadMachine(t, 2*time.Minute)
	for _, c := range []shutdownCase{
		{name: "postgres/slack", postgres: true},
		{name: "embedded/inbox", inbox: true},
		{name: "postgres/slack/group", postgres: true, group: true},
		{name: "embedded/inbox/group", inbox: true, group: true},
		{name: "postgres/slack/logs-gone", postgres: true, logsGone: true},
	} {
		for run := range *loadRuns {
			// The runs overlap, each with its own serve, provider and
			// store: the suite waits about one run, and they load the
			// machine too.
			t.Run(fmt.Sprintf("%s/%d", c.name, run), func(t *testing.T) {
				t.Parallel()
				if err := sigtermWhileHeld(t, c, run); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// loadMachine keeps the machine busy until the test and its subtests end,
// or for at most limit: a spinning process per core, and a goroutine
// writing to a file and syncing it.
func loadMachine(t *testing.T, limit time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	var spinners []*exec.Cmd
	for range runtime.NumCPU() {
		spin := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := spin.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		spinners = append(spinners, spin)
	}
	f, err := os.CreateTemp(t.TempDir(), "load-")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		defer f.Close()
		chunk := make([]byte, 1<<20)
		for written := 0; ctx.Err() == nil; written++ {
			if written%64 == 0 {
				_ = f.Truncate(0)
				_, _ = f.Seek(0, io.SeekStart)
			}
			if _, err := f.Write(chunk); err != nil {
				return
			}
			_ = f.Sync()
		}
	}()
	t.Cleanup(func() {
		cancel()
		for _, spin := range spinners {
			_ = spin.Wait()
		}
		<-writing
	})
}

// latestExecution reads a request's execution from the store serve used:
// PostgreSQL at dbURL, else the embedded store in dataDir.
func latestExecution(dbURL, dataDir, requestID string) (store.Execution, error) {
	ctx := context.Background()
	var d store.Driver
	if dbURL != "" {
		pg, err := postgres.Open(ctx, dbURL)
		if err != nil {
			return store.Execution{}, err
		}
		d = pg
	} else {
		sq, err := embedded.Open(ctx, filepath.Join(dataDir, storeFile))
		if err != nil {
			return store.Execution{}, err
		}
		d = sq
	}
	defer d.Close()
	return d.Reader().LatestExecution(ctx, requestID)
}
