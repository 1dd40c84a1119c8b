package store

import (
	"fmt"
	"testing"
)

// hotKeys holds at most two generations: a key is remembered until a whole
// generation of newer keys has been added after the one it was added in.
func TestHotKeysForgetTheOldestGeneration(t *testing.T) {
	var h hotKeys
	h.add("first")
	for i := range hotKeysPerGeneration - 1 {
		h.add(fmt.Sprint("a", i))
	}
	h.add("second") // starts the second generation
	if !h.has("first") || !h.has("second") {
		t.Fatal("a key of the two generations is forgotten")
	}
	for i := range hotKeysPerGeneration {
		h.add(fmt.Sprint("b", i))
	}
	if h.has("first") {
		t.Error("a key two generations old is remembered")
	}
	if !h.has("second") || !h.has(fmt.Sprint("b", hotKeysPerGeneration-1)) {
		t.Error("a key of the last two generations is forgotten")
	}
	if n := len(h.current) + len(h.previous); n > 2*hotKeysPerGeneration {
		t.Errorf("%d keys held", n)
	}
}
