package emailsurface

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/identity"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/surface"
)

// Name is the surface's name in the ledger; Via is the one its decisions
// are recorded with.
const (
	Name = "email"
	Via  = "email"
)

// DefaultLinkTTL is how long a link may be used when Config.LinkTTL is
// zero.
const DefaultLinkTTL = 24 * time.Hour

// Config is what an Email needs.
type Config struct {
	SMTP SMTP
	From string // the From address
	// LinkBase is the URL the links start with (countersign as reviewers
	// reach it); LinkTTL how long a link may be used.
	LinkBase string
	LinkTTL  time.Duration
	// Secrets derive the link keys: the first signs, each checks. Every
	// replica must share them; none: links die with the process.
	Secrets [][]byte
	// Uses reports whether a tool's requests go to email; nil: every
	// tool's.
	Uses   func(tool string) bool
	Review Reviewer
	Cards  surface.Cards
	// Attempts counts the wrong addresses typed for a message's links,
	// for every replica (a store.Store); nil: this process counts alone.
	Attempts Attempts
	Logger   *slog.Logger
	Now      func() time.Time // nil: time.Now
}

// Reviewer is what the links ask of review (approvals.Service).
type Reviewer interface {
	surface.Tools
	Decide(ctx context.Context, d approvals.Decision) (approvals.Outcome, error)
}

// Email is the email surface: the adapter (Surface) and the links'
// pages (Handler).
type Email struct {
	cfg  Config
	from *mail.Address
	keys keys
	now  func() time.Time
	log  *slog.Logger

	mu   sync.Mutex
	sent map[string]bool // Message-IDs this process sent, so a retry skips them
	// wrong counts, by link, the addresses typed that were not the one it
	// was sent to: past maxWrongAddresses the link decides nothing, so an
	// address cannot be guessed by trying.
	wrong map[string]int
}

// Attempts is the shared count of wrong addresses (store.Store's).
type Attempts interface {
	CountSurfaceAttempt(ctx context.Context, a store.SurfaceAttempt) (int, error)
	SurfaceAttempts(ctx context.Context, surface, key string) (int, error)
}

// maxWrongAddresses is how many wrong addresses a message's links take,
// together and on every replica (Config.Attempts), before they are spent;
// maxWrongLinks how many links a process counts alone.
const (
	maxWrongAddresses = 5
	maxWrongLinks     = 10000
)

// attemptKey names a message's links in the shared count: its request,
// round and approver, digested (a link's token is a secret, and the
// approve and reject links of one message share a count).
func attemptKey(l link) string {
	sum := sha256.Sum256([]byte(l.RequestID + "\n" + strconv.Itoa(l.Round) + "\n" + base64.RawURLEncoding.EncodeToString(l.Approver)))
	return hex.EncodeToString(sum[:])
}

// guessed counts a wrong address typed for l's message when count is set,
// and reports whether its links have had too many. An error (the count out
// of reach) is the caller's to refuse on: the links fail closed.
func (e *Email) guessed(ctx context.Context, l link, count bool) (bool, error) {
	key := attemptKey(l)
	if e.cfg.Attempts != nil {
		var n int
		var err error
		if count {
			n, err = e.cfg.Attempts.CountSurfaceAttempt(ctx, store.SurfaceAttempt{Surface: Name, Key: key, Expires: l.Expires})
		} else {
			n, err = e.cfg.Attempts.SurfaceAttempts(ctx, Name, key)
		}
		return n >= maxWrongAddresses, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wrong == nil || len(e.wrong) >= maxWrongLinks {
		e.wrong = map[string]int{}
	}
	if count {
		e.wrong[key]++
	}
	return e.wrong[key] >= maxWrongAddresses, nil
}

// New returns an Email.
func New(cfg Config) (*Email, error) {
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("email from %q: %w", cfg.From, err)
	}
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = DefaultLinkTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Uses == nil {
		cfg.Uses = func(string) bool { return true }
	}
	cfg.LinkBase = strings.TrimSuffix(cfg.LinkBase, "/")
	return &Email{cfg: cfg, from: from, keys: newKeys(cfg.Secrets), now: cfg.Now, log: cfg.Logger, sent: map[string]bool{}}, nil
}

// Surface is the adapter of the surface port.
func (e *Email) Surface() surface.Adapter { return adapter{e} }

// maxSent bounds the Message-IDs remembered; past it the memory starts
// over (a retry then resends, under the same Message-ID).
const maxSent = 10000

func (e *Email) wasSent(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sent[id]
}

func (e *Email) markSent(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.sent) >= maxSent {
		clear(e.sent)
	}
	e.sent[id] = true
}

// addresses are the approvers of v's request reached by email, each once.
func addresses(approvers []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range approvers {
		id, err := identity.ParsePerson(a)
		if err != nil || id.Scheme != identity.Email || seen[strings.ToLower(id.Value)] {
			continue
		}
		seen[strings.ToLower(id.Value)] = true
		out = append(out, id.Value)
	}
	return out
}

// ref is a card's ref: its request and round. A tool whose requests do not
// go to email gets a card that is not sent (skipPrefix), so that the
// ledger holds a card for every surface and nothing asks for one again.
const skipPrefix = "skip:"

func cardRef(requestID string, round int) string { return fmt.Sprintf("%s/%d", requestID, round) }

func splitRef(ref string) (requestID, round string, skipped bool) {
	ref, skipped = strings.CutPrefix(ref, skipPrefix)
	requestID, round, _ = strings.Cut(ref, "/")
	return requestID, round, skipped
}

// messageID is a message's deterministic Message-ID: what (card, decided,
// reply-N), the card, and its recipient.
func (e *Email) messageID(what, ref, rcpt string) string {
	id, round, _ := splitRef(ref)
	return fmt.Sprintf("<%s.%s.r%s.%s@%s>", what, id, round, tagHex(e.keys.addressTag(e.keys[0], rcpt)[:6]), e.domain())
}

func (e *Email) domain() string {
	_, d, ok := strings.Cut(e.from.Address, "@")
	if !ok {
		return "countersign"
	}
	return d
}

func tagHex(b []byte) string { return fmt.Sprintf("%x", b) }

// deliver sends msg to each address, skipping those this process sent
// already; the first error stops it (the row is retried).
func (e *Email) deliver(ctx context.Context, what, ref string, rcpts []string, render func(rcpt, msgID string) []byte) error {
	for _, rcpt := range rcpts {
		id := e.messageID(what, ref, rcpt)
		if e.wasSent(id) {
			continue
		}
		if err := e.cfg.SMTP.send(ctx, e.from.Address, rcpt, render(rcpt, id)); err != nil {
			return fmt.Errorf("sending to %s: %w", rcpt, err)
		}
		e.markSent(id)
	}
	return nil
}
