package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/client"
)

// A call retried until its context ends says so, and why the attempts
// failed: the context's error and the last cause both match.
func TestGivingUpNamesTheContextAndTheLastCause(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	c := client.New("http://"+closed, agentToken, client.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()

	_, err = c.Request(ctx, credit(100))
	var opErr *net.OpError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &opErr) {
		t.Fatalf("Request against a closed port: %v; want the deadline and the refused connection", err)
	}
	msg := err.Error()
	m := regexp.MustCompile(`^countersign: POST /v1/requests: gave up after (\d+) attempts: context deadline exceeded: .*connection refused$`).FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("the error reads %q", msg)
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("gave up after %d attempts, want the retries counted", n)
	}
}

// fakeHook answers each "METHOD path" with the statuses listed for it, in
// order, the last one from then on, and counts the attempts.
type fakeHook struct {
	*httptest.Server
	mu       sync.Mutex
	answers  map[string][]int
	attempts map[string]int
}

func startFakeHook(t *testing.T, answers map[string][]int) *fakeHook {
	t.Helper()
	f := &fakeHook{answers: answers, attempts: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.Method + " " + r.URL.Path
		f.mu.Lock()
		statuses := f.answers[call]
		n := f.attempts[call]
		f.attempts[call]++
		f.mu.Unlock()
		if len(statuses) == 0 {
			t.Errorf("unexpected call %s", call)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		status := statuses[min(n, len(statuses)-1)]
		id := fmt.Sprintf("req_%024x", n+1)
		w.Header().Set("Request-Id", id)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status >= 400 {
			code := map[int]string{500: "internal", 503: "unavailable"}[status]
			fmt.Fprintf(w, `{"error": {"code": %q, "message": "%s", "request_id": %q}}`, code, http.StatusText(status), id)
			return
		}
		fmt.Fprint(w, `{"id": "3f1c", "key": "wa_x", "status": "pending", "version": 1}`)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeHook) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[call]
}

// A read is sent again after a 500; a write is not, except the intake's
// resend of the same intent after a 503, which lands on the same key.
func TestReadsRetryA500AndWritesKeepTheirRules(t *testing.T) {
	t.Parallel()
	f := startFakeHook(t, map[string][]int{
		"GET /v1/requests/3f1c":          {500, 200},
		"POST /v1/requests":              {503, 201},
		"POST /v1/requests/3f1c/cancel":  {503},
		"POST /v1/requests/3f1c/redrive": {500},
		"GET /v1/requests/gone":          {500},
	})
	c := client.New(f.URL, agentToken, client.WithBackoff(time.Millisecond, 5*time.Millisecond))
	ctx := context.Background()

	if req, err := c.Get(ctx, "3f1c"); err != nil || req.ID != "3f1c" || f.count("GET /v1/requests/3f1c") != 2 {
		t.Errorf("Get after a 500: %+v, %v, in %d attempts; want the request in 2", req, err, f.count("GET /v1/requests/3f1c"))
	}
	if req, err := c.Request(ctx, credit(100)); err != nil || req.ID != "3f1c" || f.count("POST /v1/requests") != 2 {
		t.Errorf("Request after a 503: %+v, %v, in %d attempts; want the request in 2", req, err, f.count("POST /v1/requests"))
	}
	if _, err := c.Cancel(ctx, "3f1c"); !errors.Is(err, client.ErrUnavailable) || f.count("POST /v1/requests/3f1c/cancel") != 1 {
		t.Errorf("Cancel answered 503: %v in %d attempts; want unavailable in 1", err, f.count("POST /v1/requests/3f1c/cancel"))
	}
	if _, err := c.Redrive(ctx, "3f1c"); !errors.Is(err, client.ErrInternal) || f.count("POST /v1/requests/3f1c/redrive") != 1 {
		t.Errorf("Redrive answered 500: %v in %d attempts; want internal in 1", err, f.count("POST /v1/requests/3f1c/redrive"))
	}

	// A read that fails every time gives up when its context ends, with
	// the last refusal as its cause.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := c.Get(short, "gone")
	var apiErr *client.APIError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, client.ErrInternal) || !errors.As(err, &apiErr) ||
		apiErr.Status != http.StatusInternalServerError || !strings.Contains(err.Error(), "GET /v1/requests/gone: gave up after") {
		t.Errorf("Get answered 500 until the deadline: %v", err)
	}
	if n := f.count("GET /v1/requests/gone"); n < 2 {
		t.Errorf("Get of a request answering 500 was sent %d times, want retries", n)
	}
}

// A base URL no attempt could ever reach fails every call at once.
func TestABaseURLThatIsNoHTTPURLFailsAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, base := range []string{"countersign.internal:8080", "ftp://countersign.internal", "https://", "http://[::1"} {
		_, err := client.New(base, agentToken).Get(ctx, "wa_x")
		if err == nil || !strings.Contains(err.Error(), "is not an http or https URL") || ctx.Err() != nil {
			t.Errorf("a client of %q: %v (context: %v)", base, err, ctx.Err())
		}
	}
}
