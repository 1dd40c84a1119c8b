package postgres_test

import (
	"testing"

	"github.com/countersign/countersign/store/drivertest"
)

// The store contract on PostgreSQL: as the owner, as the runtime role, and
// without the one-statement hot paths.
func TestContract(t *testing.T) {
	for _, d := range []drivertest.Driver{drivertest.Postgres, drivertest.PostgresAppRole, drivertest.PostgresComposed} {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			drivertest.Run(t, d)
		})
	}
}
