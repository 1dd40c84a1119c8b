// Package httpsender performs approved writes over HTTP: the sender.Sender,
// sender.Verifier and sender.Checker of a tool whose provider is an HTTP
// API (the dispatch contract in docs/ARCHITECTURE.md).
//
// A send is one request with exactly the approved bytes, the
// Idempotency-Key, the Countersign-Request-Id and a Countersign-Signature
// (Sign), never replayed by the transport and never redirected; Classify
// turns the answer into an outcome by the table in docs/EXECUTOR.md. An
// Endpoint is a URL read with the key in it (URLTemplate): a verify URL
// (200 the provider has the write, 404 it does not) or a precondition
// (2xx to proceed).
package httpsender
