package callback

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/internal/signature"
	"github.com/countersign/countersign/internal/startstop"
	"github.com/countersign/countersign/store"
)

// Headers of a callback.
const (
	EventHeader    = "Countersign-Event"
	DeliveryHeader = "Countersign-Delivery"
)

// Defaults where Config is silent.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultPoll      = time.Second
	DefaultRetryBase = 2 * time.Second
	DefaultBatch     = 16
	// MaxRetryDelay caps the backoff: a delivery is tried at least about
	// once an hour until its retry window ends.
	MaxRetryDelay = time.Hour
)

// maxAnswerBytes is how much of an agent's answer is read (and discarded)
// so the connection can be reused; the rest is dropped with it.
const maxAnswerBytes = 64 << 10

// Config is what a Deliverer needs.
type Config struct {
	DB store.Store
	// Render returns the body of an attempt at delivery: the request's
	// representation as the hook returns it at the time of the attempt,
	// the delivery shown as delivering (hook.CallbackBody).
	Render  func(ctx context.Context, delivery store.Callback) ([]byte, error)
	Targets map[string]Target // by agent name
	// Timeout bounds one POST. The claim's lease (ClaimLease) is renewed
	// while the POST is in flight, so another replica never claims it.
	Timeout time.Duration
	// Poll is how often due deliveries are looked for.
	Poll time.Duration
	// RetryBase is the first retry's delay; each retry doubles it (up to
	// MaxRetryDelay), with jitter.
	RetryBase time.Duration
	Batch     int
	Logger    *slog.Logger
	Metrics   *Metrics
	// Client, when set, sends the POSTs; it must not follow redirects.
	Client *http.Client
}

// Deliverer delivers queued callbacks.
type Deliverer struct {
	cfg     Config
	targets atomic.Pointer[map[string]Target] // cfg.Targets, or SetTargets' last
	client  *http.Client
	lease   time.Duration

	startstop.Base
}

// WithDefaults returns cfg with the timings it leaves out filled in, as New
// uses them (config check prints these, so they are stated once).
func (cfg Config) WithDefaults() Config {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	return cfg
}

// New returns a Deliverer; Start runs it in the background, or call RunOnce.
func New(cfg Config) *Deliverer {
	cfg = cfg.WithDefaults()
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{
			Timeout: cfg.Timeout,
			// The URL comes from the operator's configuration; a redirect
			// could send the signed representation anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	d := &Deliverer{cfg: cfg, client: client, lease: ClaimLease}
	d.targets.Store(&cfg.Targets)
	return d
}

// SetTargets replaces where each agent's callbacks go, at once and safely
// while delivering (serve's configuration reload): the next attempt of each
// delivery, retries included, goes to its agent's new target. targets must
// not be changed afterwards.
func (d *Deliverer) SetTargets(targets map[string]Target) { d.targets.Store(&targets) }

// Start delivers in the background until Stop; the deliveries outlive
// ctx, since Stop waits for those in flight.
func (d *Deliverer) Start(ctx context.Context) error {
	ctx, err := d.StartInit(context.WithoutCancel(ctx))
	if err != nil {
		return fmt.Errorf("starting callback delivery: %w", err)
	}
	return d.Go(func() { d.run(ctx) })
}

// Stop stops claiming and waits for the deliveries in flight; when ctx ends
// first they are cut off, and their leases bring them back later.
func (d *Deliverer) Stop(ctx context.Context) error {
	if err := d.Base.Stop(ctx); err != nil {
		return fmt.Errorf("stopping callback delivery: %w; the deliveries in flight are retried after their lease", context.Cause(ctx))
	}
	return nil
}

func (d *Deliverer) run(ctx context.Context) {
	ticker := time.NewTicker(d.cfg.Poll)
	defer ticker.Stop()
	stopping := d.Stopping()
	for {
		// Drain: a full batch means more may be due.
		for {
			n, err := d.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				d.cfg.Logger.Warn("claiming callbacks failed", slog.String("error", err.Error()))
			}
			if err != nil || n < d.cfg.Batch || d.IsStopping() {
				break
			}
		}
		select {
		case <-stopping:
			return
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// RunOnce claims up to a batch of due deliveries, sends them at once and
// records each outcome. It returns how many it claimed.
func (d *Deliverer) RunOnce(ctx context.Context) (int, error) {
	rows, err := d.cfg.DB.ClaimCallbacks(ctx, d.cfg.Batch, d.lease)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, row := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.deliver(ctx, row)
		}()
	}
	wg.Wait()
	if d.cfg.Metrics != nil {
		if n, err := d.cfg.DB.CountCallbackBacklog(ctx); err == nil {
			d.cfg.Metrics.Backlog.Set(float64(n))
		}
	}
	return len(rows), nil
}

// deliver makes one attempt at row and records its outcome. An outcome that
// cannot be recorded leaves the row to its lease: it is sent again.
func (d *Deliverer) deliver(ctx context.Context, row store.Callback) {
	logger := d.cfg.Logger.With(slog.String("request_id", row.RequestID), slog.String("delivery", row.DeliveryID),
		slog.String("event", string(row.Event)), slog.String("agent", row.Agent), slog.Int("attempt", row.Attempts))
	sent := row // what is sent; row follows the renewed claim
	stopRenewing := d.holdClaim(ctx, &row, logger)
	status, reason := d.send(ctx, sent)
	stopRenewing()
	record, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	outcome := "delivered"
	if status >= 200 && status < 300 {
		if err := d.cfg.DB.MarkCallbackDelivered(record, row, status); err != nil {
			logger.Warn("recording a callback delivery failed; it will be sent again", slog.String("error", err.Error()))
		}
		logger.Debug("callback delivered", slog.Int("status", status))
	} else {
		state, err := d.cfg.DB.RetryCallback(record, store.RetryCallbackParams{Claimed: row, Delay: d.backoff(row.Attempts), Status: status, Reason: reason})
		switch {
		case errors.Is(err, store.ErrNotFound):
			logger.Info("callback attempt superseded: a redrive or a later claim sends it again")
			outcome = "retry"
		case err != nil:
			logger.Warn("recording a callback attempt failed; its lease brings it back", slog.String("error", err.Error()))
			outcome = "retry"
		case state == store.CallbackFailed:
			logger.Error("callback failed for good: its retry window has passed", slog.String("reason", reason))
			outcome = "failed"
		default:
			logger.Info("callback not delivered; retrying", slog.String("reason", reason))
			outcome = "retry"
		}
		if _, ok := (*d.targets.Load())[row.Agent]; !ok && outcome == "retry" {
			outcome = "unconfigured"
		}
	}
	if d.cfg.Metrics != nil {
		d.cfg.Metrics.Attempts.WithLabelValues(string(row.Event), outcome).Inc()
	}
}

// send POSTs the representation to the agent's URL and returns the status
// (0 when there was no answer) and, unless 2xx, why it did not land.
func (d *Deliverer) send(ctx context.Context, row store.Callback) (int, string) {
	target, ok := (*d.targets.Load())[row.Agent]
	if !ok {
		return 0, "the agent has no callback configured"
	}
	if mutant.Every("callback-dropped", 6) { // planted bug: recorded as delivered, never sent
		return http.StatusNoContent, ""
	}
	body, err := d.cfg.Render(ctx, row)
	if err != nil {
		return 0, "reading the request: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "building the request: " + outbound.Describe(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "countersign-callback")
	req.Header.Set(EventHeader, string(row.Event))
	req.Header.Set(DeliveryHeader, row.DeliveryID)
	// Signed last, over the headers it covers as they will be sent.
	req.Header.Set(signature.Header, signature.Sign(target.Secrets, time.Now(), signature.RequestOf(req), body))
	start := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		d.observe("error", start)
		return 0, outbound.Describe(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		d.observe("delivered", start)
		return resp.StatusCode, ""
	}
	d.observe("refused", start)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, "answered " + strconv.Itoa(resp.StatusCode) + " (redirects are not followed)"
	}
	return resp.StatusCode, "answered " + strconv.Itoa(resp.StatusCode)
}

func (d *Deliverer) observe(outcome string, start time.Time) {
	if d.cfg.Metrics != nil {
		d.cfg.Metrics.Duration.WithLabelValues(outcome).Observe(time.Since(start).Seconds())
	}
}

// backoff is the delay after the attempt-th failed attempt: RetryBase
// doubled per attempt up to MaxRetryDelay, drawn from its upper half so
// deliveries that failed together spread out.
func (d *Deliverer) backoff(attempt int) time.Duration {
	delay := d.cfg.RetryBase
	for i := 1; i < attempt && delay < MaxRetryDelay; i++ {
		delay *= 2
	}
	delay = min(delay, MaxRetryDelay)
	half := delay / 2
	return half + rand.N(half+1)
}
