package client_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"strconv"
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
