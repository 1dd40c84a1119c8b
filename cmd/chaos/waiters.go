package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/client"
)

// Clients that wait on an approved intent while replicas die under them:
// long-polls of GET /v1/requests/{key}?wait=30s, the Go client's Wait, and
// MCP's wait_for_outcome over HTTP and over stdio (`countersign mcp`,
// through a balancer in front of the fleet). Each re-polls on another replica after
// an error, as an agent behind a load balancer would, and must see its
// intent's final outcome, the one the ledger has, before the run ends.

// waiterKinds are the waiting clients, one started at each turn.
var waiterKinds = []string{"long-poll", "SDK", "MCP over HTTP", "MCP over stdio", "long-poll"}

// waiter is one client waiting on one intent.
type waiter struct {
	kind    string
	in      *intent
	started time.Time
	faults  int    // faults struck while it waited
	retries int    // attempts that ended without an answer, or with a 503
	seen    string // the final state it saw; "" when it never did
	problem string // why it saw none
}

// waiterSlack is how long a waiter may wait past the drain.
const waiterSlack = 10 * time.Second

var longPollClient = &http.Client{Timeout: 40 * time.Second}

// waiterLoop starts the waiting clients spread over the load: each posts an
// intent, starts waiting on it, and approves it only once a fault has
// struck (or 10 s passed), so the wait spans the fault. Each waits until
// waitCtx ends.
func (r *run) waiterLoop(load, waitCtx context.Context, votes, waiting *sync.WaitGroup) {
	every := r.opts.Load / time.Duration(len(waiterKinds)+1)
	for i, kind := range waiterKinds {
		select {
		case <-load.Done():
			return
		case <-time.After(time.Until(r.started.Add(every*time.Duration(i) + every/2))):
		}
		tool := "chaos.keyed"
		if i%2 == 1 {
			tool = "chaos.unkeyed"
		}
		in := r.acknowledge(load, agentToken, validIntent("chaos-waiter", i, tool), tool)
		if in == nil {
			return
		}
		in.Verdict = "approve"
		w := &waiter{kind: kind, in: in, started: time.Now()}
		r.mu.Lock()
		r.waiters = append(r.waiters, w)
		faultsBefore := len(r.faults)
		r.mu.Unlock()
		ctx, cancel := context.WithCancel(waitCtx)
		waiting.Add(1)
		go func() { defer waiting.Done(); defer cancel(); r.wait(ctx, w) }()
		votes.Add(1)
		go func() {
			defer votes.Done()
			deadline := time.Now().Add(10 * time.Second)
			for r.faultCount() == faultsBefore && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			r.vote(in)
		}()
	}
}

func (r *run) faultCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.faults)
}

// wait runs one waiter until it sees a final state or ctx ends.
func (r *run) wait(ctx context.Context, w *waiter) {
	var seen string
	var err error
	switch w.kind {
	case "SDK":
		seen, err = r.waitSDK(ctx, w)
	case "MCP over HTTP":
		seen, err = r.waitMCP(ctx, w)
	case "MCP over stdio":
		seen, err = r.waitMCPStdio(ctx, w)
	default:
		seen, err = r.waitLongPoll(ctx, w)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w.seen = seen
	if err != nil {
		w.problem = err.Error()
	}
	for _, f := range r.faults {
		if f.At.After(w.started) {
			w.faults++
		}
	}
}

// requestView is what the waiters read of a request.
type requestView struct {
	Status    string `json:"status"`
	Settled   bool   `json:"settled"`
	Version   int64  `json:"version"`
	Execution *struct {
		State string `json:"state"`
	} `json:"execution"`
}

// final is the request's final state as the ledger names it: its
// execution's when it was approved.
func (v requestView) final() string {
	if v.Status == "approved" && v.Execution != nil {
		return v.Execution.State
	}
	return v.Status
}

// prunedStatus is the final state a 410 pruned answer names.
func prunedStatus(body []byte) string {
	var e struct {
		Error struct {
			Code   string `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Code != "pruned" {
		return ""
	}
	return e.Error.Status
}

// waitLongPoll reads the request, then long-polls it 30 s at a time from
// the version it last saw, on whichever replica serves.
func (r *run) waitLongPoll(ctx context.Context, w *waiter) (string, error) {
	var since int64 = -1
	for ctx.Err() == nil {
		base := r.fleet.pick()
		if base == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		url := base + "/v1/requests/" + w.in.Key
		if since >= 0 {
			url += fmt.Sprintf("?wait=30s&since=%d", since)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+agentToken)
		status, body := r.waitOn(base, req)
		r.answer(w.kind, status, body)
		switch {
		case status == http.StatusOK:
			var v requestView
			if err := json.Unmarshal(body, &v); err != nil {
				return "", fmt.Errorf("an unreadable answer: %s", compact(body))
			}
			if v.Settled {
				return v.final(), nil
			}
			since = v.Version
		case status == http.StatusGone:
			if s := prunedStatus(body); s != "" {
				return s, nil
			}
			return "", fmt.Errorf("410 without a final status: %s", compact(body))
		case status == 0 || status >= 500:
			w.retries++
			time.Sleep(50 * time.Millisecond)
		default:
			return "", fmt.Errorf("answered %d: %s", status, compact(body))
		}
	}
	return "", fmt.Errorf("still waiting when the run ended")
}

// fleetTransport sends each request to a replica that serves just then: the
// load balancer an agent's SDK talks to.
type fleetTransport struct{ r *run }

func (t fleetTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.r.fleet.pick()
	if base == "" {
		return nil, errors.New("no replica serves")
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = "http", strings.TrimPrefix(base, "http://"), ""
	r := t.r
	r.mu.Lock()
	r.waitingOn[base]++
	r.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(out)
	if err == nil {
		// Counted until the answer is read: the long-poll's wait is there.
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			resp, err = nil, rerr
		}
	}
	r.mu.Lock()
	r.waitingOn[base]--
	r.mu.Unlock()
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	if status == 0 || status >= 500 {
		var body []byte
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body = io.NopCloser(bytes.NewReader(body))
		}
		r.answer("SDK", status, body)
	}
	return resp, err
}

// waitSDK waits with the Go client's Wait, which long-polls and retries
// network errors and 503s by itself.
func (r *run) waitSDK(ctx context.Context, w *waiter) (string, error) {
	c := client.New("http://fleet.invalid", agentToken, client.WithBackoff(50*time.Millisecond, 500*time.Millisecond),
		client.WithHTTPClient(&http.Client{Transport: fleetTransport{r}, Timeout: 40 * time.Second}))
	req, err := c.Wait(ctx, w.in.Key)
	var apiErr *client.APIError
	switch {
	case err == nil:
		b, _ := json.Marshal(req)
		var v requestView
		_ = json.Unmarshal(b, &v)
		return v.final(), nil
	case errors.As(err, &apiErr) && errors.Is(err, client.ErrPruned):
		return apiErr.FinalStatus, nil
	}
	return "", err
}

// waitMCP calls wait_for_outcome over HTTP (plain JSON-RPC, no session:
// /mcp is stateless) on whichever replica serves, again after an error or
// an answer not yet settled.
func (r *run) waitMCP(ctx context.Context, w *waiter) (string, error) {
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait_for_outcome","arguments":{"ref":%q,"timeout_seconds":20}}}`, w.in.Key)
	for ctx.Err() == nil {
		base := r.fleet.pick()
		if base == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(call))
		req.Header.Set("Authorization", "Bearer "+agentToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		status, body := r.waitOn(base, req)
		r.answer(w.kind, status, body)
		switch {
		case status == http.StatusOK:
			res, err := mcpResult(body)
			if err != nil {
				return "", err
			}
			if res.IsError {
				if res.Structured.Code == "pruned" {
					// The tool names no final state: read it as an agent would.
					return r.prunedFinal(ctx, w.in.Key)
				}
				w.retries++ // unreachable, retried until the call's time ran out
				continue
			}
			if res.Structured.Settled {
				return res.Structured.final(), nil
			}
		case status == 0 || status >= 500:
			w.retries++
			time.Sleep(50 * time.Millisecond)
		default:
			return "", fmt.Errorf("answered %d: %s", status, compact(body))
		}
	}
	return "", fmt.Errorf("still waiting when the run ended")
}

// mcpToolResult is a tools/call result: the request, or a tool error.
type mcpToolResult struct {
	IsError    bool `json:"isError"`
	Structured struct {
		requestView
		Code string `json:"code"`
	} `json:"structuredContent"`
}

// mcpResult reads a JSON-RPC answer, sent as JSON or as server-sent events.
func mcpResult(body []byte) (mcpToolResult, error) {
	msg := body
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		for line := range strings.SplitSeq(string(body), "\n") {
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
				msg = []byte(strings.TrimSpace(data))
			}
		}
	}
	var rpc struct {
		Result *mcpToolResult `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg, &rpc); err != nil || (rpc.Result == nil && rpc.Error == nil) {
		return mcpToolResult{}, fmt.Errorf("an unreadable MCP answer: %s", compact(body))
	}
	if rpc.Error != nil {
		return mcpToolResult{}, fmt.Errorf("MCP error: %s", rpc.Error.Message)
	}
	return *rpc.Result, nil
}

// prunedFinal reads a pruned key's final state from its 410.
func (r *run) prunedFinal(ctx context.Context, key string) (string, error) {
	for ctx.Err() == nil {
		base := r.fleet.pick()
		if base == "" {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/requests/"+key, nil)
		req.Header.Set("Authorization", "Bearer "+agentToken)
		resp, err := httpClient.Do(req)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		if s := prunedStatus(body); resp.StatusCode == http.StatusGone && s != "" {
			return s, nil
		}
		if resp.StatusCode < 500 {
			return "", fmt.Errorf("MCP said pruned; GET answered %d: %s", resp.StatusCode, compact(body))
		}
	}
	return "", fmt.Errorf("still waiting when the run ended")
}

// judgeWaiters checks that every waiting client saw its intent's final
// state, the one the ledger has.
func (r *run) judgeWaiters(f *Figures, ledger ledgerView) {
	wrong, spanned := 0, 0
	var lines []string
	for _, w := range r.waiters {
		final := ledger.final[w.in.Key]
		if w.seen == "" || w.seen != final {
			wrong++
			f.note("a waiting client wrong", "%s on %s saw %q (%s); the ledger has %q", w.kind, w.in.Key, w.seen, w.problem, final)
		}
		if w.faults > 0 {
			spanned++
		}
		lines = append(lines, fmt.Sprintf("%s saw %s (%d faults while waiting, %d attempts retried)", w.kind, w.seen, w.faults, w.retries))
	}
	f.check("waiting clients that did not see the ledger's final state", wrong, 0)
	f.Checked = append(f.Checked, Row{Name: "waiting clients (long-poll, SDK, MCP over HTTP and stdio) across a fault", Value: fmt.Sprintf("%d of %d", spanned, len(r.waiters)),
		Want: ">= 3", OK: spanned >= 3})
	f.note("waiting clients", "%s", strings.Join(lines, "; "))
}

// waitOn sends a waiting client's request to base and reads the answer,
// counting the client as waiting on base meanwhile: some kills are aimed at
// a replica a client waits on. Status 0 is no answer.
func (r *run) waitOn(base string, req *http.Request) (int, []byte) {
	r.mu.Lock()
	r.waitingOn[base]++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.waitingOn[base]--
		r.mu.Unlock()
	}()
	resp, err := longPollClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, body
}

// waitedOn returns a replica among up that a waiting client waits on, or
// nil.
func (r *run) waitedOn(up []*replica) *replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rep := range up {
		if u := rep.url(); u != "" && r.waitingOn[u] > 0 {
			return rep
		}
	}
	return nil
}
