package approvals

import "sync/atomic"

// policy is what a configuration reload replaces at once: the tools with
// their review policies, and the agents' owners.
type policy struct {
	tools  map[string]Tool
	owners map[string][]string
}

// reloaded holds the policy Reconfigure last stored; nil until then, when the
// Service's own Tools and Owners fields are read.
type reloaded = atomic.Pointer[policy]

// Reconfigure replaces the tools and the owners the Service reads, at once
// and safely while it serves (serve's SIGHUP). Requests already stored keep
// the policy frozen on them; only new requests, and the approvers of tools
// whose policy was not frozen, see the change. tools and owners must not be
// changed afterwards.
func (s *Service) Reconfigure(tools map[string]Tool, owners map[string][]string) {
	s.reloaded.Store(&policy{tools: tools, owners: owners})
}

// CurrentTools returns the tools as last configured.
func (s *Service) CurrentTools() map[string]Tool {
	if p := s.reloaded.Load(); p != nil {
		return p.tools
	}
	return s.Tools
}

func (s *Service) currentOwners() map[string][]string {
	if p := s.reloaded.Load(); p != nil {
		return p.owners
	}
	return s.Owners
}
