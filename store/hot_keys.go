package store

import "sync"

// hotKeysPerGeneration bounds the keys hotKeys remembers: two generations
// of at most this many, about 3 MB at most.
const hotKeysPerGeneration = 16384

// hotKeys remembers the keys this process stored or answered lately. A
// replay of one is read before anything is inserted (Intake): the retry
// storm after an agent fleet restarts resends keys it has just stored, and
// a read costs less than the insert that would find them. When the newer
// generation fills, the older is forgotten.
type hotKeys struct {
	mu                sync.Mutex
	current, previous map[string]struct{}
}

func (h *hotKeys) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, now := h.current[key]
	_, before := h.previous[key]
	return now || before
}

func (h *hotKeys) add(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.current[key]; ok {
		return
	}
	if h.current == nil || len(h.current) >= hotKeysPerGeneration {
		h.previous, h.current = h.current, make(map[string]struct{}, hotKeysPerGeneration)
	}
	h.current[key] = struct{}{}
}
