package bot

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/slack-go/slack"
)

// A click's answer in flight when Stop begins is sent before Stop returns;
// none is sent once the bot has stopped.
func TestStopWaitsForTheClickAnswerInFlight(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var answered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		answered.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"message_ts":"1.1"}`)
	}))
	t.Cleanup(srv.Close)
	b := New(Config{Slack: slack.New("xoxb-test", slack.OptionAPIURL(srv.URL+"/"))})

	b.answer("C1", "U1", "You approved")
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- b.Stop(context.Background()) }()
	<-b.Stopping()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) with an answer in flight", err)
	default:
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if n := answered.Load(); n != 1 {
		t.Fatalf("%d answers sent by the time Stop returned, want 1", n)
	}
	b.answer("C1", "U1", "You approved")
	b.Wait()
	if n := answered.Load(); n != 1 {
		t.Fatalf("an answer was sent after Stop: %d in all", n)
	}
}
