package sender

import (
	"context"
	"time"
)

// Write is one approved write as a sender sees it: exactly the approved
// bytes, under the key fixed at intent time.
type Write struct {
	Tool      string
	Key       string
	RequestID string
	Body      []byte
}

// Sender makes one attempt of an approved write and classifies it. It
// never retries and never resends: the executor decides whether and when
// another attempt is made. ctx carries the tool's timeout.
type Sender interface {
	Send(ctx context.Context, w Write) Attempt
	// Outcome is what code, recorded from one of this sender's attempts,
	// stood for. known is false for a code outside the sender's small fixed
	// set (it is then counted under "other").
	Outcome(code string) (o Outcome, known bool)
}

// Verifier asks the provider whether it has a write. An error means it
// could not say; its text is recorded, so it must carry no secret.
type Verifier interface {
	Verify(ctx context.Context, w Write) (Verification, error)
}

// Checker asks the provider, before a write's first send, whether it may
// still go ahead (a tool's precondition). An error says no, in words that
// are recorded, so they must carry no secret.
type Checker interface {
	Check(ctx context.Context, w Write) error
}

// Attempt is the classified outcome of one send.
type Attempt struct {
	Outcome Outcome
	// Code is the provider's code or one of the sender's own; empty on
	// success.
	Code       string
	Message    string
	RetryAfter time.Duration // how long the provider asked to wait; 0 when it did not
	// ProviderRef is the provider's id of the write, when it said.
	ProviderRef string
	// Status and Body are the provider's answer, recorded on the execution:
	// a protocol's status number (0 when none) and what came back.
	Status int
	Body   []byte
}

// Verification is a provider's answer about a write.
type Verification struct {
	Found       bool
	Status      int
	Body        []byte
	ProviderRef string
}
