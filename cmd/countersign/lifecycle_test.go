package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

// journal records what components did, in order.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, s)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// recorded notes when its component's Start and Stop begin and end.
type recorded struct {
	name string
	c    component
	j    *journal
}

func (r recorded) Start(ctx context.Context) error {
	r.j.add("start " + r.name)
	return r.c.Start(ctx)
}

func (r recorded) Stop(ctx context.Context) error {
	r.j.add("stop " + r.name)
	err := r.c.Stop(ctx)
	r.j.add("stopped " + r.name)
	return err
}

// The lifecycle starts real components in order and stops them in reverse,
// each only once the one after it has ended: the scheduler's Stop waits for
// the sweep it was running, and the store closes last.
func TestLifecycleStopsInReverseOrderAndWaits(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	logger := slog.New(slog.DiscardHandler)
	j := &journal{}

	notifier, _, listening := db.Notifier(logger)
	listener := notifier.(component)
	ledger := store.NewLedger(db, store.Options{})
	batcher := store.NewIntakeBatcher(ledger, 1, 8)
	sched := newScheduler(logger, soleLeader{}, prometheus.NewRegistry())
	sweeping := make(chan struct{})
	var once sync.Once
	if err := sched.add("blocking", "@every 1s", func(ctx context.Context) error {
		once.Do(func() { close(sweeping) })
		<-ctx.Done() // Stop ends it
		j.add("sweep ended")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	l := lifecycle{logger: logger}
	for _, p := range []struct {
		name string
		c    component
	}{
		{"store", funcs{stop: func(context.Context) error { db.Close(); close(closed); return nil }}},
		{"listener", listener},
		{"intake batcher", batcher},
		{"scheduler", sched},
	} {
		l.parts = append(l.parts, part{name: p.name, component: recorded{p.name, p.c, j}, grace: 30 * time.Second})
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := l.start(ctx); err != nil {
		t.Fatal(err)
	}
	// Started: the listener listens.
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener never listened")
	}
	select {
	case <-sweeping:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweep never ran")
	}

	l.stop(time.Now())

	want := []string{
		"start store", "start listener", "start intake batcher", "start scheduler",
		"stop scheduler", "sweep ended", "stopped scheduler",
		"stop intake batcher", "stopped intake batcher",
		"stop listener", "stopped listener",
		"stop store", "stopped store",
	}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("journal:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Stopped means ended: calls fail instead of waiting for a worker.
	if _, err := batcher.Insert(context.Background(), store.NewRequest{Key: "wa_late", Step: []byte("1"), Snapshot: []byte("{}")}); err != store.ErrBatcherStopped {
		t.Errorf("Insert after Stop = %v, want %v", err, store.ErrBatcherStopped)
	}
	select {
	case <-closed:
	default:
		t.Error("the store was not closed")
	}
}

// A part that fails to start stops those started before it, in reverse.
func TestLifecycleUnwindsAFailedStart(t *testing.T) {
	t.Parallel()
	j := &journal{}
	noop := funcs{}
	l := lifecycle{logger: slog.New(slog.DiscardHandler), parts: []part{
		{name: "a", component: recorded{"a", noop, j}},
		{name: "b", component: recorded{"b", noop, j}},
		{name: "c", component: recorded{"c", funcs{start: func(context.Context) error { return fmt.Errorf("no") }}, j}},
		{name: "d", component: recorded{"d", noop, j}},
	}}
	if err := l.start(context.Background()); err == nil || !strings.Contains(err.Error(), "starting the c: no") {
		t.Fatalf("start = %v", err)
	}
	want := []string{"start a", "start b", "start c", "stop b", "stopped b", "stop a", "stopped a"}
	if got := j.list(); !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
}

// newApp lists serve's components in the order they start.
func TestNewAppOrdersTheComponents(t *testing.T) {
	t.Parallel()
	fakeSlack := "http://127.0.0.1:9/api"
	a := testApp(t, &config.Config{SlackBotToken: "xoxb-test", SlackSigningSecret: "s3cret", SlackAPIURL: fakeSlack}, nil)
	var names []string
	for _, p := range a.parts {
		names = append(names, p.name)
	}
	want := []string{"store", "listener", "sweep leadership", "intake batcher", "executor", "bot", "callback deliverer", "scheduler", "parked long-polls", "http server"}
	if !slices.Equal(names, want) {
		t.Fatalf("components %q, want %q", names, want)
	}
	// retention runs with no window too: it creates the audit's partitions ahead.
	for _, sweep := range []string{"expiry", "dispatch", "reconcile", "card convergence", "retention"} {
		if !a.hasSweep(sweep) {
			t.Errorf("no %s sweep", sweep)
		}
	}
}

// A configuration error is reported before the port is bound: serve says
// what is wrong even though the port is taken, and never tries it.
func TestServeReportsAConfigErrorWithoutBinding(t *testing.T) {
	t.Parallel()
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	sum := sha256.Sum256([]byte(smokeToken))
	cfgPath := writeConfig(t, fmt.Sprintf(`
executor: {dispatch_schedule: "every second"}
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:])))
	env := map[string]string{
		"COUNTERSIGN_DATABASE_URL":    "postgres://127.0.0.1:1/never-opened",
		"COUNTERSIGN_CONFIG":          cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET": smokeSecret,
		"COUNTERSIGN_LISTEN":          held.Addr().String(),
	}
	var stderr strings.Builder
	code := run(context.Background(), []string{"serve"}, envFrom(env), nil, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "dispatch_schedule") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "listening on") || strings.Contains(stderr.String(), "address already in use") {
		t.Errorf("serve tried the port before reporting the configuration: %s", stderr.String())
	}

	// The same configuration, fixed, does reach the port (and finds it
	// taken): the check above is not passing by accident.
	fixed := writeConfig(t, fmt.Sprintf(`
agents: [{name: smoke-agent, token_sha256: %s}]
tools:
  billing.credit:
    approvers: [U0ANA]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`, hex.EncodeToString(sum[:])))
	env["COUNTERSIGN_CONFIG"] = fixed
	stderr.Reset()
	code = run(context.Background(), []string{"serve"}, envFrom(env), nil, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "listening on "+held.Addr().String()) {
		t.Fatalf("a valid configuration on a taken port: exit %d: %s", code, stderr.String())
	}
}

func TestLocalBase(t *testing.T) {
	t.Parallel()
	for listen, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080",
		":8080":          "http://127.0.0.1:8080",
		"0.0.0.0:9000":   "http://127.0.0.1:9000",
		"[::1]:8080":     "http://[::1]:8080",
		"127.0.0.1:0":    "",
		"nonsense":       "",
	} {
		if got := localBase(listen); got != want {
			t.Errorf("localBase(%q) = %q, want %q", listen, got, want)
		}
	}
}
