//go:build chaosmutant

package mutant

import (
	"os"
	"sync"
	"sync/atomic"
)

// chosen is the one planted bug switched on in this process.
var chosen = os.Getenv("COUNTERSIGN_CHAOS_MUTANT")

var calls sync.Map // name → *atomic.Int64

// On reports whether the planted bug name is the one chosen.
func On(name string) bool { return name != "" && name == chosen }

// Every reports whether the chosen bug name strikes this time: on its
// first call and then once in every n.
func Every(name string, n int) bool {
	if !On(name) {
		return false
	}
	c, _ := calls.LoadOrStore(name, new(atomic.Int64))
	return (c.(*atomic.Int64).Add(1)-1)%int64(max(n, 1)) == 0
}
