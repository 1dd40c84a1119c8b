// Package surfacetest is a review surface for tests: Memory keeps its
// cards and their threads in memory, so a test can see what a second
// surface beside Slack was sent. It is imported by tests only.
package surfacetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Card is a card as the memory surface holds it.
type Card struct {
	Ref         string
	Destination string
	RequestID   string
	Key         string
	Round       int
	State       string // the View's state it last showed
	Updates     int    // how many times it was updated after its post
	Replies     []Reply
}

// Reply is a reply in a card's thread.
type Reply struct {
	OutboxID int64
	Nudge    store.NudgeKind // "" for word of a failed or needs-review write
	Reason   string
}

// Memory is an in-memory review surface (surface.Adapter). Every tool's
// cards go to its one room.
type Memory struct {
	name string
	room string

	mu    sync.Mutex
	cards []*Card
}

// New returns an empty memory surface called name.
func New(name string) *Memory { return &Memory{name: name, room: "room"} }

var _ surface.Adapter = (*Memory)(nil)

func (m *Memory) Name() string { return m.name }

func (m *Memory) Destination(string) string { return m.room }

func (m *Memory) DestinationOf(ref string) string {
	dest, _, _ := strings.Cut(ref, "/")
	return dest
}

func (m *Memory) Post(_ context.Context, dest string, v surface.View) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &Card{Ref: fmt.Sprintf("%s/%d", dest, len(m.cards)+1), Destination: dest, RequestID: v.Request.ID,
		Key: v.Request.Key, Round: v.Round, State: v.State}
	m.cards = append(m.cards, c)
	return c.Ref, nil
}

func (m *Memory) Find(_ context.Context, dest string, v surface.View, _ time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.cards {
		if c.Destination == dest && c.Key == v.Request.Key && c.Round == v.Round {
			return c.Ref, nil
		}
	}
	return "", nil
}

func (m *Memory) Update(_ context.Context, ref string, v surface.View) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.card(ref)
	if c == nil {
		return surface.ErrCardGone
	}
	c.State = v.State
	c.Updates++
	return nil
}

func (m *Memory) Remove(_ context.Context, ref string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range m.cards {
		if c.Ref == ref {
			m.cards = append(m.cards[:i], m.cards[i+1:]...)
			return nil
		}
	}
	return nil
}

func (m *Memory) Reply(_ context.Context, ref string, r surface.Reply) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.card(ref)
	if c == nil {
		return surface.ErrCardGone
	}
	nudge, _ := r.Nudge()
	reason, _ := r.Row.Data["reason"].(string)
	c.Replies = append(c.Replies, Reply{OutboxID: r.Row.ID, Nudge: nudge, Reason: reason})
	return nil
}

func (m *Memory) FindReply(_ context.Context, ref string, r surface.Reply) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.card(ref); c != nil {
		for _, got := range c.Replies {
			if got.OutboxID == r.Row.ID {
				return true, nil
			}
		}
	}
	return false, nil
}

func (m *Memory) Classify(err error) *delivery.Failure { return delivery.Classify(err) }

// Holds gives the surface a card it showed before (say, under an earlier
// schema): ref at the destination before its first "/".
func (m *Memory) Holds(ref, requestID, key string, round int, state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cards = append(m.cards, &Card{Ref: ref, Destination: m.DestinationOf(ref), RequestID: requestID, Key: key, Round: round, State: state})
}

// Card returns a copy of the card of a request round, if one was posted.
func (m *Memory) Card(requestID string, round int) (Card, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.cards {
		if c.RequestID == requestID && c.Round == round {
			out := *c
			out.Replies = append([]Reply(nil), c.Replies...)
			return out, true
		}
	}
	return Card{}, false
}

// Cards is how many cards the surface holds.
func (m *Memory) Cards() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.cards)
}

// card is the card ref; m.mu is held.
func (m *Memory) card(ref string) *Card {
	for _, c := range m.cards {
		if c.Ref == ref {
			return c
		}
	}
	return nil
}
