// Package providertest serves the sandbox provider in tests, where it stands
// in for a real provider: tests count the objects it holds.
package providertest

import (
	"net/http/httptest"
	"testing"

	"github.com/countersign/countersign/sandbox"
)

// The sandbox's types under the names tests use.
type (
	Provider = sandbox.Provider
	Behavior = sandbox.Behavior
	Object   = sandbox.Object
)

// New returns an empty provider that honours keys.
func New() *Provider { return sandbox.New() }

// Start serves p on a loopback httptest server closed when the test ends.
func Start(t testing.TB, p *Provider) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Release()
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}
