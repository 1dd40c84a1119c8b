// Package python is the home of the Python SDK (the countersign package
// beside this file); its Go test runs the SDK's own tests, so go test ./...
// and make test hold the SDK to the server it is built with.
package python
