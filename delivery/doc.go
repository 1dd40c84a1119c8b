// Package delivery is the one worker that sends what the ledger queued to
// the world outside: card posts, updates and thread replies to review
// surfaces, and callbacks to agents. A Worker claims due items with a
// short lease, renews the lease while they are worked, works the items of
// one lane in order and the lanes at once, classifies each attempt's error
// (Classify: permanent, transient, rate limited with a pause, postponed)
// and records the outcome through its Queue, with Backoff between
// transient retries. A Pacer spaces the posts of a lane across the fleet
// from a Budget kept in the ledger, and holds a lane back while a rate
// limit's pause runs.
//
// It runs on internal/startstop's Base and knows no store, no surface and
// no HTTP: what is claimed, how it is sent and how an outcome is written
// belong to the Queue and the Deliver function that a user hands it.
package delivery
