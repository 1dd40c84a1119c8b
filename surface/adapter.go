package surface

import (
	"context"
	"errors"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/store"
)

// Adapter is one review surface. Its methods are each one call to the
// surface (or a short search); the Deliverer decides when to make them.
type Adapter interface {
	// Name is the surface's name in the ledger ("slack"): outbox rows,
	// cards and pacing lanes are keyed by it.
	Name() string
	// Destination is where a tool's cards go on this surface (a Slack
	// channel); "" when the tool has none there, and its posts fail.
	Destination(tool string) string
	// DestinationOf is the destination a card's ref is at, the lane its
	// thread replies are paced in.
	DestinationOf(ref string) string

	// Post shows a round's card at dest and returns the surface's
	// reference to it.
	Post(ctx context.Context, dest string, v View) (ref string, err error)
	// Find looks at dest for the card of v's round that an earlier attempt
	// may have posted without its ref being recorded, posted no earlier
	// than since; "" when there is none.
	Find(ctx context.Context, dest string, v View, since time.Time) (ref string, err error)
	// Update shows v on the card ref. A card the surface no longer has is
	// an error wrapping ErrCardGone.
	Update(ctx context.Context, ref string, v View) error
	// Remove takes back a card posted twice.
	Remove(ctx context.Context, ref string) error

	// Reply answers in card ref's thread, as r asks.
	Reply(ctx context.Context, ref string, r Reply) error
	// FindReply reports whether card ref's thread holds r already.
	FindReply(ctx context.Context, ref string, r Reply) (bool, error)

	// Classify reads one of the adapter's errors: rate limited (with the
	// pause asked for), permanent, or transient.
	Classify(err error) *delivery.Failure
}

// Reply is a thread reply the outbox owes: a reminder or escalation (Row's
// data names the nudge and the mentions), or word that the request's write
// failed or needs review (Row's data names the reason). Row's id tells a
// reply from another, for FindReply.
type Reply struct {
	View View
	Row  store.OutboxRow
}

// Nudge reports whether the reply is a reminder or an escalation, and
// which.
func (r Reply) Nudge() (store.NudgeKind, bool) {
	kind, _ := r.Row.Data["nudge"].(string)
	return store.NudgeKind(kind), kind != ""
}

// ErrCardGone is a card the surface no longer has (someone deleted it):
// the sweep stops updating it.
var ErrCardGone = errors.New("the card is gone")
