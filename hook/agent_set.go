package hook

import (
	"net/http"
	"sync/atomic"

	"github.com/countersign/countersign/approvals"
)

// AgentSet is the agents a Handler authenticates, replaceable at once while
// it serves (serve's configuration reload): a request is checked against one
// whole set, the one before or the one after.
type AgentSet struct {
	current atomic.Pointer[Agents]
}

// NewAgentSet returns a set holding agents.
func NewAgentSet(agents Agents) *AgentSet {
	s := &AgentSet{}
	s.Store(agents)
	return s
}

// Store replaces the agents; agents must not be changed afterwards.
func (s *AgentSet) Store(agents Agents) { s.current.Store(&agents) }

// Load returns the agents as last stored.
func (s *AgentSet) Load() Agents { return *s.current.Load() }

// Authenticate is Agents.Authenticate on the current agents.
func (s *AgentSet) Authenticate(authorization string) (approvals.Agent, bool) {
	return s.Load().Authenticate(authorization)
}

// AgentOnly is Agents.AgentOnly on the agents current at each request.
func (s *AgentSet) AgentOnly(next func(w http.ResponseWriter, r *http.Request, agent approvals.Agent)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Load().AgentOnly(next).ServeHTTP(w, r)
	})
}
