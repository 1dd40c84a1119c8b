package executor

import (
	"log/slog"
	"time"
)

// toolset is the tools an Executor serves, with their defaults applied, and
// the claim timeout of each, which is also which tools it claims.
type toolset struct {
	tools    map[string]Tool
	timeouts map[string]time.Duration
}

func newToolset(tools map[string]Tool) *toolset {
	ts := &toolset{tools: make(map[string]Tool, len(tools)), timeouts: make(map[string]time.Duration, len(tools))}
	for name, t := range tools {
		t = t.withDefaults()
		t.Name = name
		ts.tools[name] = t
		ts.timeouts[name] = t.ClaimTimeout
	}
	return ts
}

// bind gives each tool without a sender of its own the HTTP one, through
// e's client and with e's secrets.
func (ts *toolset) bind(e *Executor) *toolset {
	for name, t := range ts.tools {
		ts.tools[name] = e.httpTool(t)
	}
	return ts
}

func (ts *toolset) longestTimeout() time.Duration {
	longest := time.Duration(0)
	for _, t := range ts.tools {
		longest = max(longest, t.Timeout)
	}
	return longest
}

// SetTools replaces the tools the Executor claims and sends for, at once
// and safely while it runs (serve's configuration reload). A send already
// under way finishes with the tool it started with; the next claim uses the
// new set, and a tool no longer in it is no longer claimed. tools must not
// be changed afterwards. A timeout longer than the longest at New is cut
// short by the HTTP client built then (for a tool sent over HTTP): restart for that.
func (e *Executor) SetTools(tools map[string]Tool) {
	ts := newToolset(tools).bind(e)
	if old := e.toolset.Load(); ts.longestTimeout() > old.longestTimeout() && e.clientBuilt {
		e.logger.Warn("a reloaded tool's timeout is longer than any at start; its sends are cut at the longest one at start until serve restarts",
			slog.Duration("timeout", ts.longestTimeout()))
	}
	e.toolset.Store(ts)
}
