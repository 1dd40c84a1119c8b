// Package typescript is the home of the TypeScript SDK (the
// @countersign/client package beside this file); its Go test compiles it
// and runs its own tests, so go test ./... and make test hold the SDK to
// the server it is built with.
package typescript
