package hook

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/internal/requestid"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// parkedHook is b's service behind a hook of its own, mounted as serve
// mounts it, on a real server whose connections can be taken: its
// long-polls park. (The bundle's own server checks every answer against
// the OpenAPI document through a writer that cannot be taken, so its
// long-polls wait on goroutines.)
type parkedHook struct {
	h        *Handler
	registry *prometheus.Registry
	server   *httptest.Server
	logs     *syncBuffer
}

func (b *bundle) parkedHook(t *testing.T) *parkedHook {
	t.Helper()
	var agents Agents
	for name, token := range map[string]string{"billing-agent": testToken, "other-agent": otherToken} {
		sum := sha256.Sum256([]byte(token))
		agent, err := ParseAgent(name, hex.EncodeToString(sum[:]))
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, agent)
	}
	ph := &parkedHook{registry: prometheus.NewRegistry(), logs: &syncBuffer{}}
	logger := slog.New(requestid.Handler(slog.NewJSONHandler(ph.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ph.h = NewHandler(b.svc, agents, b.listener, logger, NewMetrics(ph.registry))
	mux := http.NewServeMux()
	mux.Handle("/v1/", ph.h)
	ph.server = httptest.NewServer(mux)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = ph.h.AnswerParked(ctx)
		ph.server.Close()
	})
	return ph
}

// rawAnswer is what a long-poll on a connection of its own got back.
type rawAnswer struct {
	status int
	header http.Header
	body   []byte
	// close is whether it said Connection: close; closed whether the
	// server then closed the connection.
	close, closed bool
	err           error
	at            time.Time
}

// send opens a connection and sends GET path on it as token.
func (ph *parkedHook) send(t *testing.T, token, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ph.server.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: countersign\r\nAuthorization: Bearer %s\r\n\r\n", path, token); err != nil {
		t.Fatal(err)
	}
	return conn
}

// receive reads the one answer on conn, and whether the server then closed it.
func receive(conn net.Conn) rawAnswer {
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	a := rawAnswer{at: time.Now(), err: err}
	if err != nil {
		return a
	}
	a.status, a.header, a.close = resp.StatusCode, resp.Header, resp.Close
	a.body, a.err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !a.close {
		return a // kept alive
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = br.ReadByte()
	a.closed = err == io.EOF
	return a
}

// longPoll sends GET path on a connection of its own and reads its answer
// in the background.
func (ph *parkedHook) longPoll(t *testing.T, token, path string) <-chan rawAnswer {
	conn := ph.send(t, token, path)
	answered := make(chan rawAnswer, 1)
	go func() { answered <- receive(conn) }()
	return answered
}

// waitParked waits until n long-polls are parked.
func (ph *parkedHook) waitParked(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ph.h.parking.parked() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d long-polls parked after 20s", ph.h.parking.parked(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// plainGet is GET /v1/requests/{id} without wait, through the same hook.
func (ph *parkedHook) plainGet(t *testing.T, id string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, ph.server.URL+"/v1/requests/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ph.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", id, resp.StatusCode, body)
	}
	return body
}

// answered waits for a long-poll's answer.
func answered(t *testing.T, ch <-chan rawAnswer, within time.Duration) rawAnswer {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("reading the answer: %v", a.err)
		}
		return a
	case <-time.After(within):
		t.Fatalf("no answer within %s", within)
		return rawAnswer{}
	}
}

// checkClosingAnswer checks what every answer of a parked long-poll carries:
// the normal path's headers, with Content-Length, and Connection: close,
// after which the connection is closed.
func checkClosingAnswer(t *testing.T, a rawAnswer) {
	t.Helper()
	if got := a.header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := a.header.Get(requestid.Header); !strings.HasPrefix(got, "req_") {
		t.Errorf("Request-Id = %q", got)
	}
	if got := a.header.Get("Content-Length"); got != strconv.Itoa(len(a.body)) {
		t.Errorf("Content-Length = %q for a body of %d bytes", got, len(a.body))
	}
	if a.header.Get("Date") == "" {
		t.Error("no Date")
	}
	if !a.close {
		t.Error("no Connection: close")
	}
	if !a.closed {
		t.Error("the connection stayed open after the answer")
	}
}

// gotCount is how many get requests the hook counted with status.
func (ph *parkedHook) gotCount(t *testing.T, status int) uint64 {
	t.Helper()
	families, err := ph.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range families {
		if f.GetName() != "countersign_http_request_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == "get" && labels["code"] == strconv.Itoa(status) {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// A parked long-poll is answered on a change to its request with the new
// version, in the body a plain GET answers, and closes its connection; it
// is counted and logged once, with its status, when answered.
func TestHookParkedAnsweredOnAChange(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		req := b.submit(t, nil)
		poll := ph.longPoll(t, testToken, "/v1/requests/"+req.ID+"?wait=30s")
		ph.waitParked(t, 1)
		if got := testutil.ToFloat64(ph.h.metrics.Waiting); got != 1 {
			t.Errorf("waiting gauge = %v, want 1", got)
		}
		if n := ph.gotCount(t, 200); n != 0 {
			t.Errorf("a parked long-poll was counted %d times before its answer", n)
		}
		if _, err := b.svc.Cancel(b.ctx, billingAgent, req.ID); err != nil {
			t.Fatal(err)
		}
		a := answered(t, poll, 10*time.Second)
		var v wire.Request
		if err := json.Unmarshal(a.body, &v); err != nil || a.status != 200 || v.Status != wire.StatusCancelled || v.Version != 2 || !v.Settled {
			t.Fatalf("parked long-poll after a cancel = %d %s", a.status, a.body)
		}
		if plain := ph.plainGet(t, req.ID); string(plain) != string(a.body) {
			t.Errorf("parked answer differs from a plain GET's:\n%s\n%s", a.body, plain)
		}
		checkClosingAnswer(t, a)
		for deadline := time.Now().Add(5 * time.Second); ph.gotCount(t, 200) < 2 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		if n := ph.gotCount(t, 200); n != 2 { // the long-poll and the plain GET
			t.Errorf("get counted %d times with 200, want 2", n)
		}
		if got := strings.Count(ph.logs.String(), `"http_request_id":"`+a.header.Get(requestid.Header)+`"`); got != 1 {
			t.Errorf("the parked long-poll has %d log lines, want 1:\n%s", got, ph.logs)
		}
		if ph.h.parking.parked() != 0 || testutil.ToFloat64(ph.h.metrics.Waiting) != 0 || testutil.ToFloat64(ph.h.metrics.Parked) != 0 || b.hasWaiter(req.ID) {
			t.Errorf("after its answer: %d parked, gauges %v and %v, subscribed %v", ph.h.parking.parked(),
				testutil.ToFloat64(ph.h.metrics.Waiting), testutil.ToFloat64(ph.h.metrics.Parked), b.hasWaiter(req.ID))
		}
	})
}

// A parked long-poll whose request does not change is answered at its
// deadline with the representation unchanged; since waits past the
// version it names.
func TestHookParkedAnsweredAtItsDeadline(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		req := b.submit(t, nil)
		start := time.Now()
		poll := ph.longPoll(t, testToken, "/v1/requests/"+req.ID+"?wait=1s&since=1")
		ph.waitParked(t, 1)
		a := answered(t, poll, 10*time.Second)
		if took := a.at.Sub(start); took < time.Second {
			t.Errorf("answered after %s, before its deadline", took)
		}
		if plain := ph.plainGet(t, req.ID); a.status != 200 || string(plain) != string(a.body) {
			t.Errorf("at the deadline = %d %s, want the unchanged %s", a.status, a.body, plain)
		}
		checkClosingAnswer(t, a)
	})
}

// Stopping the parking answers every parked long-poll at once with the
// current representation, and a long-poll that would park afterwards is
// answered at once.
func TestHookParkedAnsweredOnShutdown(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		req := b.submit(t, nil)
		poll := ph.longPoll(t, testToken, "/v1/requests/"+req.ID+"?wait=60s")
		ph.waitParked(t, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ph.h.AnswerParked(ctx); err != nil {
			t.Fatal(err)
		}
		// AnswerParked returns once the answer is written.
		a := answered(t, poll, time.Second)
		if plain := ph.plainGet(t, req.ID); a.status != 200 || string(plain) != string(a.body) {
			t.Errorf("on shutdown = %d %s, want %s", a.status, a.body, plain)
		}
		checkClosingAnswer(t, a)

		start := time.Now()
		late := answered(t, ph.longPoll(t, testToken, "/v1/requests/"+req.ID+"?wait=60s"), 5*time.Second)
		if late.status != 200 || time.Since(start) > 2*time.Second {
			t.Errorf("a long-poll after shutdown = %d after %s, want 200 at once", late.status, time.Since(start))
		}
	})
}

// 200 parked long-polls, each on its own request, get their own request's
// answer; while they wait, no goroutine waits for them.
func TestHookParkedManyEachGetTheirOwn(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		const n = 200
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		reqs := make([]store.Request, n)
		for i := range reqs {
			reqs[i] = b.submit(t, &approvalstest.IntentOpts{RunID: new(fmt.Sprintf("r-park-%d", i))})
		}
		goroutines := runtime.NumGoroutine()
		conns := make([]net.Conn, n)
		for i, req := range reqs {
			conns[i] = ph.send(t, testToken, "/v1/requests/"+req.ID+"?wait=60s")
		}
		ph.waitParked(t, n)
		// Parked: no goroutine of the server's waits for them (a waiting
		// handler would be two per connection), and no client reads yet.
		if grew := runtime.NumGoroutine() - goroutines; grew >= n {
			t.Errorf("%d goroutines more with %d parked long-polls", grew, n)
		}
		if got := testutil.ToFloat64(ph.h.metrics.Parked); got != n {
			t.Errorf("parked gauge = %v, want %d", got, n)
		}
		answers := make([]chan rawAnswer, n)
		for i, conn := range conns {
			answers[i] = make(chan rawAnswer, 1)
			go func() { answers[i] <- receive(conn) }()
		}
		for _, req := range reqs {
			if _, err := b.svc.Cancel(b.ctx, billingAgent, req.ID); err != nil {
				t.Fatal(err)
			}
		}
		for i, req := range reqs {
			a := answered(t, answers[i], 20*time.Second)
			var v wire.Request
			if err := json.Unmarshal(a.body, &v); err != nil || a.status != 200 || v.ID != req.ID || v.Status != wire.StatusCancelled {
				t.Errorf("waiter %d on %s got %d %s", i, req.ID, a.status, a.body)
			}
		}
	})
}

// An agent's long-poll on another agent's request is 404 and never parks:
// it reads what its agent sees, as a plain GET does.
func TestHookParkedOtherAgentsRequestIsNotFound(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		req := b.submit(t, nil)
		for _, ref := range []string{req.ID, req.Key} {
			a := answered(t, ph.longPoll(t, otherToken, "/v1/requests/"+ref+"?wait=30s"), 5*time.Second)
			if a.status != 404 || !strings.Contains(string(a.body), `"not_found"`) {
				t.Errorf("other agent's long-poll on %s = %d %s", ref, a.status, a.body)
			}
			if a.close {
				t.Errorf("a refusal at once closed its connection")
			}
		}
		if ph.h.parking.parked() != 0 || b.hasWaiter(req.ID) {
			t.Error("the other agent's long-poll parked")
		}
	})
}

// A parked poll re-reads as its agent: woken for a request its agent does
// not see, it answers 404, as a plain GET does.
func TestHookParkedRereadsAsItsAgent(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		req := b.submit(t, nil)
		server, client := net.Pipe()
		defer client.Close()
		p := &parkedPoll{h: ph.h, conn: server, agent: billingAgent, id: req.ID, since: 1, deadline: time.Now().Add(time.Minute),
			start: time.Now(), requestID: "req_test", path: "/v1/requests/" + req.ID, reading: true}
		p.agent.Name = "other-agent"
		p.unsubscribe = func() {}
		p.timer = time.AfterFunc(time.Hour, func() {})
		p.work, p.leave, _ = ph.h.parking.begin()
		ph.h.parking.add(p)
		go p.run()
		a := receive(client)
		if a.err != nil || a.status != 404 || !strings.Contains(string(a.body), `"not_found"`) || !strings.Contains(string(a.body), `"req_test"`) {
			t.Errorf("re-read as another agent = %d %s %v", a.status, a.body, a.err)
		}
	})
}

// A parked long-poll whose client goes away ends at once, unanswered, and
// is counted and logged as 499, as net/http's background read ends a
// waiting handler's.
func TestHookParkedEndsWhenItsClientGoesAway(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("hang-ups are noticed on Linux only")
	}
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		ph := b.parkedHook(t)
		req := b.submit(t, nil)
		conn := ph.send(t, testToken, "/v1/requests/"+req.ID+"?wait=60s")
		ph.waitParked(t, 1)
		conn.Close()
		for deadline := time.Now().Add(5 * time.Second); ph.h.parking.parked() > 0 || b.hasWaiter(req.ID); {
			if time.Now().After(deadline) {
				t.Fatal("the long-poll was still parked 5s after its client went away")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if n := ph.gotCount(t, 499); n != 1 || testutil.ToFloat64(ph.h.metrics.Waiting) != 0 {
			t.Errorf("counted %d times as 499, waiting gauge %v; want 1 and 0", n, testutil.ToFloat64(ph.h.metrics.Waiting))
		}
	})
}
