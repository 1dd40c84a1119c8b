// Package sender is the port through which the executor performs approved
// writes: a Sender makes one attempt of a write at its provider and says
// what came back, a Verifier asks the provider whether it has a write, and
// a Checker asks whether a write may still go ahead.
//
// The executor keeps every rule around them: the claim before a send, the
// attempts cap, what an ambiguous outcome becomes, when to verify and what a
// verification settles. A Sender knows its provider's protocol and nothing of
// the ledger. HTTP is one implementation (executor/httpsender); another
// transport (an upstream MCP server, a queue) implements the same three
// interfaces and is named by the tool's configuration.
//
// It imports the standard library only.
package sender
