package embedded_test

import (
	"testing"

	"github.com/countersign/countersign/store/drivertest"
)

// The store contract on SQLite.
func TestContract(t *testing.T) {
	drivertest.Run(t, drivertest.SQLite)
}
