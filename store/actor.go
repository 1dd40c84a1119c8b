package store

// Audit actors other than a person's id: who moved a row, as events.actor
// records it. The prefixes are written here only.
const (
	// SystemActor is the sweeps' (expiry, reminders).
	SystemActor = "system"
	// ReconcilerActor is the executor's reconcile sweep.
	ReconcilerActor = "executor:reconciler"
)

// AgentActor is the audit actor of the agent named agent.
func AgentActor(agent string) string { return "agent:" + agent }

// ExecutorActor is the audit actor of the executor worker named worker.
func ExecutorActor(worker string) string { return "executor:" + worker }
