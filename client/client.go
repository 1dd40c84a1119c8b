package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/wire"
)

// Client calls one countersign server as one agent. It is safe for
// concurrent use.
type Client struct {
	baseURL    string
	token      string
	http       *http.Client
	minBackoff time.Duration
	maxBackoff time.Duration
	// badURL is why baseURL cannot be called, if it cannot: every call
	// fails with it at once rather than retrying until its context ends.
	badURL error
}

// Option adjusts a Client built by New.
type Option func(*Client)

// WithHTTPClient makes the Client send through hc. Its Timeout, if set, must
// be longer than a long-poll (60 s) or Wait cuts its own polls short.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithBackoff sets the first and the longest pause between retries of a
// network error, a 503 or a read's 500 (default 200 ms doubling to 5 s; a
// Retry-After the server sends is honoured when longer).
func WithBackoff(first, longest time.Duration) Option {
	return func(c *Client) { c.minBackoff, c.maxBackoff = first, longest }
}

// New returns a client of the countersign server at baseURL
// ("https://countersign.internal") that authenticates with the agent's
// bearer token. A baseURL that is not an http or https URL makes every
// call fail at once, without retries.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{
		baseURL:    strings.TrimRight(baseURL, "/"),
		token:      token,
		http:       &http.Client{Timeout: pollWait + 30*time.Second},
		minBackoff: 200 * time.Millisecond,
		maxBackoff: 5 * time.Second,
	}
	if u, err := url.Parse(c.baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.badURL = fmt.Errorf("countersign: the base URL %q is not an http or https URL", baseURL)
	}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// pollWait is how long one long-poll of Wait asks the server to hold.
const pollWait = 60 * time.Second

// Request asks for the intent's write and returns the request: created
// (201), or the one its key already names (200, Replayed set), whatever its
// state. A network error or a 503 is retried with the same bytes, so it
// cannot create a second request, until ctx ends. An IdempotencyKey
// countersign would refuse is an *InvalidKeyError, and nothing is sent.
func (c *Client) Request(ctx context.Context, in Intent) (*Request, error) {
	if err := in.checkKey(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("client: encoding intent: %w", err)
	}
	a, err := c.call(ctx, http.MethodPost, "/v1/requests", body, true)
	if err != nil {
		return nil, err
	}
	req, err := decodeRequest(a)
	if err != nil {
		return nil, err
	}
	req.Replayed = a.status == http.StatusOK && a.header.Get("Idempotent-Replayed") == "true"
	return req, nil
}

// Get returns the request named by ref, its id or its full key. A network
// error, a 500 or a 503 is retried until ctx ends: a read changes nothing.
func (c *Client) Get(ctx context.Context, ref string) (*Request, error) {
	a, err := c.call(ctx, http.MethodGet, requestPath(ref, ""), nil, true)
	if err != nil {
		return nil, err
	}
	return decodeRequest(a)
}

// Wait returns the request named by ref once it is settled (rejected,
// expired, cancelled, or its execution succeeded or failed), or once it
// awaits its agent (AwaitsOutcome: an agent-executed write approved, with
// its receipt), long-polling from the version it last saw so no change is
// missed. It waits until ctx ends; a request that needs a human's review of
// its outcome is not settled.
func (c *Client) Wait(ctx context.Context, ref string) (*Request, error) {
	// A plain read first: a request settled already needs no poll, and its
	// version is where the first poll starts.
	req, err := c.Get(ctx, ref)
	for err == nil && !req.Settled && !req.AwaitsOutcome() {
		query := url.Values{"wait": {pollWait.String()}, "since": {strconv.FormatInt(req.Version, 10)}}
		var a answer
		if a, err = c.call(ctx, http.MethodGet, requestPath(ref, "")+"?"+query.Encode(), nil, true); err == nil {
			req, err = decodeRequest(a)
		}
	}
	if err != nil {
		return nil, err
	}
	return req, nil
}

// Do asks for the intent's write and waits until it is settled: Request then
// Wait, retrying network errors and 503s with the same intent, so the key
// never changes (and a 500 while it reads). Bound it with ctx. A write the
// tool's policy refuses returns ErrDeniedByPolicy at once, without waiting;
// one it allows is approved on arrival and waited for like any other.
func (c *Client) Do(ctx context.Context, in Intent) (*Request, error) {
	req, err := c.Request(ctx, in)
	if err != nil || req.Settled {
		return req, err
	}
	return c.Wait(ctx, req.ID)
}

// ReportOutcome records how an agent-executed write the agent performed
// itself went (wire.OutcomeSucceeded or wire.OutcomeFailed) and returns the
// request settled by it. The same report again is answered as the first;
// another is ErrOutcomeConflict. A network error, a 500 or a 503 is
// retried until ctx ends: the report is idempotent.
func (c *Client) ReportOutcome(ctx context.Context, ref string, out wire.Outcome) (*Request, error) {
	body, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the outcome: %w", err)
	}
	a, err := c.call(ctx, http.MethodPost, requestPath(ref, "/outcome"), body, true)
	if err != nil {
		return nil, err
	}
	return decodeRequest(a)
}

// GatewayTools lists the tools of the upstream MCP servers countersign's
// gateway exposes, reads and gated ones, retried as Get is.
func (c *Client) GatewayTools(ctx context.Context) ([]wire.GatewayTool, error) {
	a, err := c.call(ctx, http.MethodGet, "/v1/gateway/tools", nil, true)
	if err != nil {
		return nil, err
	}
	var list wire.GatewayToolList
	if err := json.Unmarshal(a.body, &list); err != nil {
		return nil, fmt.Errorf("client: decoding gateway tools: %w", err)
	}
	return list.Tools, nil
}

// GatewayCall passes a read through the gateway to its upstream and returns
// the upstream's CallToolResult as JSON. It is not retried: a read is
// cheap to call again, and the caller decides.
func (c *Client) GatewayCall(ctx context.Context, tool string, arguments json.RawMessage) (json.RawMessage, error) {
	body, err := json.Marshal(wire.GatewayCall{Tool: tool, Arguments: arguments})
	if err != nil {
		return nil, fmt.Errorf("client: encoding the call: %w", err)
	}
	a, err := c.call(ctx, http.MethodPost, "/v1/gateway/call", body, false)
	if err != nil {
		return nil, err
	}
	var res wire.GatewayResult
	if err := json.Unmarshal(a.body, &res); err != nil {
		return nil, fmt.Errorf("client: decoding the call's result: %w", err)
	}
	return res.Result, nil
}

// Cancel withdraws a pending request. One no longer pending is
// ErrAlreadyDecided. It is not retried: the first attempt may have landed.
func (c *Client) Cancel(ctx context.Context, ref string) (*Request, error) {
	a, err := c.call(ctx, http.MethodPost, requestPath(ref, "/cancel"), nil, false)
	if err != nil {
		return nil, err
	}
	return decodeRequest(a)
}

// Redrive sends the request's latest callback again.
func (c *Client) Redrive(ctx context.Context, ref string) (*Request, error) {
	a, err := c.call(ctx, http.MethodPost, requestPath(ref, "/redrive"), nil, false)
	if err != nil {
		return nil, err
	}
	return decodeRequest(a)
}

// Tools lists the tools this agent may request, retried as Get is.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	a, err := c.call(ctx, http.MethodGet, "/v1/tools", nil, true)
	if err != nil {
		return nil, err
	}
	var list wire.ToolList
	if err := json.Unmarshal(a.body, &list); err != nil {
		return nil, fmt.Errorf("client: decoding tools: %w", err)
	}
	return list.Tools, nil
}

func requestPath(ref, action string) string {
	return "/v1/requests/" + url.PathEscape(ref) + action
}

// answer is one HTTP answer, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// maxAnswerBytes caps what the client reads of an answer.
const maxAnswerBytes = 8 << 20

// once sends one attempt. Its error is the transport's, which names the
// URL; call says which call it was.
func (c *Client) once(ctx context.Context, method, path string, body []byte) (answer, error) {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	r, err := http.NewRequestWithContext(ctx, method, c.baseURL+path, reader)
	if err != nil {
		return answer{}, err
	}
	r.Header.Set("Authorization", "Bearer "+c.token)
	r.Header.Set("Accept", "application/json")
	r.Header.Set("User-Agent", userAgent())
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(r)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return answer{}, fmt.Errorf("reading the answer: %w", err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

func decodeRequest(a answer) (*Request, error) {
	var req Request
	if err := json.Unmarshal(a.body, &req); err != nil {
		return nil, fmt.Errorf("client: decoding the request: %w", err)
	}
	return &req, nil
}

// decodeError reads the hook's error body; an answer without one (a proxy's
// page) still becomes an *APIError with its status.
func decodeError(a answer) *APIError {
	var body wire.ErrorBody
	e := &APIError{Status: a.status, RequestID: a.header.Get("Request-Id")}
	if json.Unmarshal(a.body, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message, e.Field, e.Errors = body.Error.Code, body.Error.Message, body.Error.Field, body.Error.Errors
		e.FinalStatus, e.Tools = body.Error.Status, body.Error.Tools
		e.Key, e.Tier = body.Error.Key, body.Error.Tier
		if body.Error.RequestID != "" {
			e.RequestID = body.Error.RequestID
		}
	} else {
		e.Message = http.StatusText(a.status)
		if a.status == http.StatusServiceUnavailable {
			e.Code = "unavailable"
		}
	}
	if secs, err := strconv.Atoi(a.header.Get("Retry-After")); err == nil && secs > 0 {
		e.RetryAfter = time.Duration(secs) * time.Second
	}
	return e
}
