// Package surface is the port through which reviewers see requests: a
// review surface (Slack today; Microsoft Teams, email or a web console
// next) is an Adapter, and the Deliverer turns the ledger's outbox rows
// into calls on the adapters of each request's tool.
//
// The ledger knows surfaces only by name. An outbox row names its surface,
// or none ("") for every surface of the tool; a card is recorded per
// request, round and surface, under the adapter's own opaque reference
// (Slack's is channel/ts); pacing is kept per lane, a surface and a
// destination (a Slack channel). What is rendered and how is the
// adapter's; what must be shown (View), whether a card is already there,
// whether an earlier attempt may have posted it, when a reply is no longer
// owed, and the recording of each outcome are the Deliverer's, written
// once for every surface. It runs on the delivery worker: claim, lease,
// pacing, retries and the classification of an adapter's errors
// (Adapter.Classify).
//
// A tool whose cards go to more than one surface has each row handed to
// every surface as a row of its own (store.Ledger.FanOutOutbox), so that a
// rate limit or an outage of one surface neither holds back nor repeats
// another's delivery.
//
// Before a request's first card is posted, the Deliverer asks its tool's
// preview endpoint what the write changes (Previewer, through a
// PreviewFetcher: the HTTP call is package previewhttp's): the previews of
// a claimed batch at once, each once per request across replicas, a card
// waiting for its own at most the tool's timeout. View.Change is what
// every surface renders of it.
package surface
