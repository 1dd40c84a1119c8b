package main

import (
	"log/slog"
	"reflect"

	"github.com/countersign/countersign/config"
)

// reload reads the configuration file again on SIGHUP and, when it is valid,
// replaces the agents, the tools and their policies, the owners and the
// callback targets at once, while requests are served: requests already
// stored keep the policy frozen on them, an approved write not yet sent is
// re-checked against the new policy before its first send, and a send
// under way finishes with the tool it started with. A file that does not validate is refused with every
// problem logged, and the running configuration stays. What is read from
// the environment, and the listeners, the store and the schedules, are set
// at start: changing them needs a restart, and a reload says so.
func (a *app) reload(getenv func(string) string) {
	log := a.logger.With("component", "config")
	if a.cfg.Local() {
		log.Warn("SIGHUP: the local run has no configuration file to reload (COUNTERSIGN_CONFIG is not set)")
		return
	}
	loaded, err := config.Load(getenv)
	if err == nil {
		err = loaded.Validate()
	}
	if err != nil {
		log.Error("configuration reload refused; the running configuration stays", slog.String("file", a.cfg.ConfigPath),
			slog.String("problems", err.Error()))
		return
	}
	if !reflect.DeepEqual(loaded.File.Executor, a.cfg.File.Executor) || !reflect.DeepEqual(loaded.File.Callbacks, a.cfg.File.Callbacks) ||
		!reflect.DeepEqual(loaded.File.Retention, a.cfg.File.Retention) {
		log.Warn("the executor, callbacks and retention settings take effect at the next restart; the rest is reloaded")
	}
	if loaded.File.Slack.Channel != a.cfg.File.Slack.Channel || !reflect.DeepEqual(loaded.File.Slack.LookupAllowed, a.cfg.File.Slack.LookupAllowed) ||
		!reflect.DeepEqual(loaded.File.Slack.Admins, a.cfg.File.Slack.Admins) {
		log.Warn("the slack block takes effect at the next restart; the rest is reloaded")
	}
	// The executor first: from the moment intake freezes a request under
	// the new policy, the executor re-checks approvals against that policy
	// too, never against the one it replaces.
	if !reflect.DeepEqual(gatewayUpstreams(loaded), gatewayUpstreams(a.currentConfig())) {
		log.Warn("the upstreams' connections (command, url, headers, env, reads, idempotent, call_timeout) change at the next restart; their review settings are reloaded")
	}
	a.reloaded.Store(loaded)
	a.reloadConsole(loaded, log)
	a.applyTools(loaded)
	a.api.Agents().Store(loaded.AgentList())
	a.api.SetToolHooks(loaded.ToolHooks())
	if a.callbacks != nil {
		a.callbacks.SetTargets(loaded.CallbackTargets())
	}
	log.Info("configuration reloaded", slog.String("file", loaded.ConfigPath),
		slog.Int("agents", len(loaded.File.Agents)), slog.Int("tools", len(loaded.File.Tools)))
}
