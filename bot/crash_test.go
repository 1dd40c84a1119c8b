package bot_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
)

// Environment of the worker process the crash test kills.
const (
	envWorkerDB    = "COUNTERSIGN_BOT_TEST_WORKER_DB"
	envWorkerSlack = "COUNTERSIGN_BOT_TEST_WORKER_SLACK"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(envWorkerDB); db != "" {
		runWorker(db, os.Getenv(envWorkerSlack))
		return
	}
	os.Exit(m.Run())
}

// runWorker is the outbox worker as a process of its own: it delivers until
// it is killed.
func runWorker(dbURL, slackURL string) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, dbURL)
	if err != nil {
		os.Exit(3)
	}
	client := slack.New("xoxb-test", slack.OptionAPIURL(slackURL+"/"), slack.OptionHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	review := must(approvals.New(approvals.Config{DB: store.NewLedger(db, store.Options{}), Logger: slog.New(slog.DiscardHandler), Tools: map[string]approvals.Tool{
		"billing.credit": {Name: "billing.credit", Channel: billingChan, Approvers: []string{"UANA"}},
	}}))
	w := bot.New(bot.Config{Slack: client, Review: review, Cards: store.NewLedger(db, store.Options{}), Lookup: lookup.Service{DB: store.NewLedger(db, store.Options{})}, PostInterval: -1, Lease: 500 * time.Millisecond})
	for {
		if _, err := w.DeliverOnce(ctx); err != nil {
			os.Exit(4)
		}
		time.Sleep(20 * time.Millisecond) // the worker's own poll interval, not a test wait
	}
}

// A worker killed (SIGKILL) after Slack stored its card and before it
// recorded the ts leaves one card: the next worker finds it by its metadata
// once the dead worker's lease runs out.
func TestKilledWorkerLeavesOneCard(t *testing.T) {
	t.Parallel()
	b := setup(t, &options{lease: 500 * time.Millisecond})
	req := b.submit(intent{})

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorkerDB+"="+b.db.Pool.Config().ConnString(), envWorkerSlack+"="+b.fake.URL())
	started := make(chan *os.Process, 1)
	killed := make(chan struct{})
	b.fake.AfterPost(func(bottest.Message) {
		_ = (<-started).Kill() // before Slack answers: the ts never reaches the worker
		close(killed)
	})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started <- cmd.Process
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the worker never posted")
	}
	_ = cmd.Wait()
	b.fake.AfterPost(nil)
	if got := tsOf(b.request(req.ID).CardRef); got != "" {
		t.Fatalf("the killed worker recorded ts %q", got)
	}

	b.deliver()
	if n := b.fake.Count("chat.postMessage"); n != 1 {
		t.Fatalf("chat.postMessage calls = %d, want 1", n)
	}
	msgs := b.fake.Messages(billingChan)
	if len(msgs) != 1 || tsOf(b.request(req.ID).CardRef) != msgs[0].TS {
		t.Fatalf("%d cards; recorded ts %q", len(msgs), tsOf(b.request(req.ID).CardRef))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
