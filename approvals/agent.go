package approvals

import "github.com/countersign/countersign/store"

// Agent is a caller of the hook as the service knows it: by name, with what
// it may see. The hook authenticates it (hook.Agents).
type Agent struct {
	Name string
	// Admin agents read, wait on and cancel every agent's requests; the
	// others only their own.
	Admin bool
	// Callback is whether the agent has a callback URL configured.
	Callback bool
}

// Sees reports whether the agent may read, wait on and cancel req: its own
// requests, or every request for an admin.
func (a Agent) Sees(req store.Request) bool {
	return a.Admin || req.RequestedBy == a.Name
}
