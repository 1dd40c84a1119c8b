// Package callback delivers signed callbacks to agents: when one of an
// agent's requests settles, needs a person again, or (a write of an
// agent-executed tool) is approved for the agent to perform, the store queues a
// delivery in the transition's transaction (store.Callback), and a
// Deliverer POSTs the request's representation to the agent's configured
// URL with
//
//	Countersign-Event: request.settled | request.needs_review | request.approved | request.edited
//	Countersign-Delivery: <delivery id, the same on every retry and redrive>
//	Countersign-Signature: t=<unix>,v1=<hex>,v2=<hex> (v2 also covers the method, the path and the delivery id)
//
// signed with the agent's callback secret (docs/CALLBACKS.md). The body is
// the representation at the time of the attempt (hook.CallbackBody), which
// says the delivery is delivering.
//
// A 2xx answer delivers it; anything else (a redirect included: redirects
// are never followed) is retried with jittered exponential backoff until
// the row's retry window of at least 24 hours has passed. Claims are
// leases on the row, so a crashed process's deliveries come back after the
// lease: delivery is at least once, and the agent dedupes on the delivery id.
// The claims, their renewal and the retries run on the delivery worker
// (package delivery), as the cards to the review surfaces do.
package callback
