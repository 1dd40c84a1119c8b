// Package onedecision is the check that a request shown on every surface
// gets one decision: its test wires the real Slack, Teams, email and
// console handlers on one PostgreSQL, decides each request on all four at
// once, and reads every surface's card at the end. It has no code of its
// own (docs/SURFACES.md).
package onedecision
