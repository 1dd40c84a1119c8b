package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Upstream is one MCP server countersign reaches as a client.
type Upstream struct {
	Name        string            // the configuration's key; [a-z0-9_-], no "__"
	Command     []string          // stdio: the program and its arguments; or
	URL         string            // streamable HTTP
	Headers     map[string]string // sent on every HTTP request (credentials: never logged, never in an error's text)
	Env         map[string]string // extra environment of a command
	Trusted     bool              // its readOnlyHint / idempotentHint annotations are believed
	Reads       []string          // its tools that pass straight through, by upstream tool name
	Idempotent  []string          // its tools that may be resent after a lost connection
	CallTimeout time.Duration     // one tools/call's bound; 0: 60s
}

// Tool is an upstream tool as countersign exposes it.
type Tool struct {
	Upstream, Name     string // Name: the upstream's own tool name
	Exposed            string // "<upstream>__<tool>", at most 64 characters (longer ones are left out and logged)
	Title, Description string
	InputSchema        json.RawMessage
	OutputSchema       json.RawMessage // nil when none
	Annotations        Annotations     // as the upstream declared them
	Read               bool            // passes through: listed in Reads, or readOnlyHint true from a Trusted upstream
	Idempotent         bool            // listed in Idempotent, or idempotentHint true from a Trusted upstream
}

// Annotations are a tool's hints as its upstream declared them. A nil hint
// was not declared. The Go SDK reads readOnlyHint and idempotentHint as
// plain booleans, so when a tool declares any annotations those two are
// never nil (an absent one reads false, the protocol's default).
type Annotations struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
	Title                                        string
}

// Health is one upstream's state, for /readyz and the metrics.
type Health struct {
	Name      string
	Up        bool
	Tools     int       // its tools exposed now; 0 while down
	LastError string    // why it went down or its last connection failed; no credential
	Since     time.Time // when Up last changed (or the gateway started)
}

// Separator joins an upstream's name and its tool's into the exposed name.
const Separator = "__"

// MaxExposed is the longest exposed name: the longest tool name MCP
// clients commonly accept.
const MaxExposed = 64

// DefaultCallTimeout bounds one tools/call when the upstream sets none.
const DefaultCallTimeout = 60 * time.Second

// MetaIdempotencyKey is the key of the call's _meta under which the
// Sender sends an approved write's idempotency key, so an upstream that
// reads it can drop a second call of the same write.
const MetaIdempotencyKey = "countersign/idempotency_key"

// MetaRequestID is the key of the call's _meta under which the Sender
// sends the countersign request the write belongs to.
const MetaRequestID = "countersign/request_id"

// ErrUnknownTool is Call's error for an exposed name no connected upstream
// has.
var ErrUnknownTool = errors.New("unknown tool")

// DownError is Call's error when the tool's upstream is not connected:
// nothing was sent.
type DownError struct {
	Upstream string
	Reason   string // why, when the call found out itself; no credential
}

func (e *DownError) Error() string {
	if e.Reason != "" {
		return "upstream " + e.Upstream + " is down: " + e.Reason
	}
	return "upstream " + e.Upstream + " is down"
}

var validName = regexp.MustCompile(`^[a-z0-9_-]+$`)

// ValidName returns an error saying why name cannot name an upstream, or nil.
func ValidName(name string) error {
	switch {
	case !validName.MatchString(name):
		return errors.New("an upstream's name is made of a-z, 0-9, _ and -")
	case strings.Contains(name, Separator):
		return errors.New(`an upstream's name has no "__": it separates the upstream from the tool`)
	case len(name)+len(Separator) >= MaxExposed:
		return errors.New("an upstream's name leaves no room for a tool's within 64 characters")
	}
	return nil
}

// Gateway holds a client session with each upstream and their tools.
type Gateway struct {
	logger    *slog.Logger
	upstreams []*upstream
	byName    map[string]*upstream

	mu       sync.Mutex
	onChange []func()
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	changed  chan struct{}
	notifier chan struct{} // closed when the OnChange goroutine ends
}

// New returns a gateway to upstreams; Start connects them. An upstream
// whose name ValidName refuses, or that has neither a command nor a URL,
// is never connected: Health reports it down with the reason.
func New(upstreams []Upstream, logger *slog.Logger) *Gateway {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		logger:  logger,
		byName:  map[string]*upstream{},
		changed: make(chan struct{}, 1),
	}
	now := time.Now()
	for _, cfg := range upstreams {
		u := &upstream{g: g, cfg: cfg, since: now, lastError: "not connected yet",
			firstTry: make(chan struct{}), relist: make(chan struct{}, 1)}
		u.logger = logger.With("upstream", cfg.Name)
		if err := ValidName(cfg.Name); err != nil {
			u.invalid = err.Error()
		} else if (len(cfg.Command) == 0) == (cfg.URL == "") {
			u.invalid = "an upstream has a command or a url, exactly one"
		} else if _, dup := g.byName[cfg.Name]; dup {
			u.invalid = "two upstreams are named " + cfg.Name
		}
		if u.invalid != "" {
			u.lastError = u.invalid
			close(u.firstTry)
		} else {
			g.byName[cfg.Name] = u
		}
		g.upstreams = append(g.upstreams, u)
	}
	return g
}

// Start connects every upstream in the background and returns once each
// has had one connection attempt (its tools are listed when it succeeded),
// or when ctx ends first; then the attempts go on in the background. An
// upstream that cannot be reached is down and is tried again with backoff
// (250 ms doubling to 30 s); Start does not fail for it. ctx bounds only
// the wait: the sessions last until Stop. Start's only errors are ctx's,
// and a second Start (or one after Stop).
func (g *Gateway) Start(ctx context.Context) error {
	g.mu.Lock()
	if g.started || g.stopped {
		g.mu.Unlock()
		return errors.New("gateway: started twice, or after Stop")
	}
	g.started = true
	run, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.notifier = make(chan struct{})
	g.mu.Unlock()

	go g.notify(run)
	for _, u := range g.upstreams {
		if u.invalid != "" {
			u.logger.Error("upstream not connected", "error", u.invalid)
			continue
		}
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			u.run(run)
		}()
	}
	for _, u := range g.upstreams {
		select {
		case <-u.firstTry:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stop closes every session and ends every command (its standard input
// closed, then SIGTERM, then SIGKILL, each after a grace of 2 s) and waits
// for them. OnChange is not called after Stop returns.
func (g *Gateway) Stop() {
	g.mu.Lock()
	if !g.started || g.stopped {
		g.stopped = true
		g.mu.Unlock()
		return
	}
	g.stopped = true
	g.cancel()
	g.mu.Unlock()
	g.wg.Wait()
	<-g.notifier
}

// OnChange registers fn, called after the tool list changed: an upstream
// connected, went down, or sent tools/list_changed and was listed again.
// The calls are made one at a time from one goroutine; a burst of changes
// may be told in one call.
func (g *Gateway) OnChange(fn func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.onChange = append(g.onChange, fn)
}

func (g *Gateway) changedNow() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

func (g *Gateway) notify(ctx context.Context) {
	defer close(g.notifier)
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.changed:
		}
		g.mu.Lock()
		fns := slices.Clone(g.onChange)
		g.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}
}

// Tools returns every connected upstream's tools, sorted by Exposed.
func (g *Gateway) Tools() []Tool {
	var all []Tool
	for _, u := range g.upstreams {
		u.mu.Lock()
		if u.session != nil {
			all = append(all, u.tools...)
		}
		u.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b Tool) int { return strings.Compare(a.Exposed, b.Exposed) })
	return all
}

// Tool returns the tool exposed under exposed, when its upstream is
// connected and lists it.
func (g *Gateway) Tool(exposed string) (Tool, bool) {
	u, _, ok := g.split(exposed)
	if !ok {
		return Tool{}, false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.session == nil {
		return Tool{}, false
	}
	for _, t := range u.tools {
		if t.Exposed == exposed {
			return t, true
		}
	}
	return Tool{}, false
}

// split finds the upstream an exposed name begins with.
func (g *Gateway) split(exposed string) (*upstream, string, bool) {
	name, tool, ok := strings.Cut(exposed, Separator)
	if !ok || tool == "" {
		return nil, "", false
	}
	u, ok := g.byName[name]
	return u, tool, ok
}

// Health returns each upstream's state, in the configuration's order.
func (g *Gateway) Health() []Health {
	hs := make([]Health, 0, len(g.upstreams))
	for _, u := range g.upstreams {
		u.mu.Lock()
		h := Health{Name: u.cfg.Name, Up: u.session != nil, LastError: u.lastError, Since: u.since}
		if h.Up {
			h.Tools = len(u.tools)
		}
		u.mu.Unlock()
		hs = append(hs, h)
	}
	return hs
}

// Call passes a call of the tool exposed under exposed through to its
// upstream, with args (a JSON object; empty means {}), bounded by the
// upstream's CallTimeout. A tool error is a result with IsError set, not
// an error. Its errors: ErrUnknownTool, a *DownError when the upstream is
// not connected (nothing was sent), a *CallError otherwise.
func (g *Gateway) Call(ctx context.Context, exposed string, args json.RawMessage) (*mcp.CallToolResult, error) {
	t, ok := g.Tool(exposed)
	if !ok {
		if u, _, found := g.split(exposed); found && !u.isUp() {
			return nil, &DownError{Upstream: u.cfg.Name}
		}
		return nil, ErrUnknownTool
	}
	res, err := g.byName[t.Upstream].call(ctx, t.Name, args, nil)
	if err != nil {
		return nil, err
	}
	return res, nil
}
