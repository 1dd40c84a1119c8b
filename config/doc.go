// Package config is countersign's configuration: the environment
// (COUNTERSIGN_*, SLACK_*) and the YAML file COUNTERSIGN_CONFIG names, read
// into one Config whose Validate reports every problem at once, each at its
// line in the file, in sentences an operator can act on.
//
// It owns the schema (the YAML keys, their defaults, their checks) and the
// conversion of a valid configuration into what each part of serve takes:
// ReviewTools for approvals, ExecutorTools for the executor,
// CallbackTargets for the callback deliverer, AgentList for the hook.
// cmd/countersign composes: it loads, validates, and hands each part its
// share; it defines no configuration of its own.
package config
