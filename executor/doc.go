// Package executor performs approved writes: exactly the approved bytes, under
// the key fixed at intent time, once.
//
// The life of an execution (docs/STATES.md):
//
//	ready ──claim──▶ claimed ──2xx──▶ succeeded
//	  ▲                │ ──fatal code──▶ failed
//	  │                │ ──retryable (attempts < max)──▶ ready (backoff)
//	  │                │ ──ambiguous / claim timeout──▶ unknown ──verify──▶ succeeded | ready | needs_review
//	  └── revalidation fails before a send ──▶ superseded (request pending again, round + 1)
//
// A claim commits before any byte is sent (write-ahead) and counts the attempt
// on the row; the outcome is recorded after, conditionally on the claim still
// being the worker's, so a stale worker never overwrites a newer outcome. No
// transaction is open during a send. When the executor cannot know
// whether the provider acted (a timeout after the request was written, a
// crash, a claim that expired) it asks the provider (Reconcile), and when the
// provider cannot say, a human (Resolve).
//
// Each tool's writes go through the sender port (executor/sender): a Sender
// makes one attempt and classifies it, a Verifier and a Checker ask the
// provider. A tool configured with a method and a URL is sent over HTTP
// (executor/httpsender); the rules above are the executor's whatever the
// sender.
//
// Nothing is kept in process memory that correctness depends on: every replica
// runs the same loops (DispatchOnce, ReconcileOnce) against one PostgreSQL.
package executor
