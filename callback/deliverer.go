package callback

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/delivery"
	"github.com/countersign/countersign/internal/mutant"
	"github.com/countersign/countersign/internal/outbound"
	"github.com/countersign/countersign/internal/signature"
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

// Deliverer delivers queued callbacks, on the delivery worker: every
// claimed delivery at once, retried with backoff until the ledger's retry
// window for it ends.
type Deliverer struct {
	cfg     Config
	targets atomic.Pointer[map[string]Target] // cfg.Targets, or SetTargets' last
	client  *http.Client

	*delivery.Worker[store.Callback]
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
	d := &Deliverer{cfg: cfg, client: client}
	d.targets.Store(&cfg.Targets)
	d.Worker = delivery.New(delivery.Config[store.Callback]{
		Name: "callback", Queue: queue{d}, Deliver: d.send,
		Backoff: delivery.Backoff{Base: cfg.RetryBase, Max: MaxRetryDelay},
		Batch:   cfg.Batch, Lease: ClaimLease, Poll: cfg.Poll, Finish: true,
		AfterRun: d.gaugeBacklog, Logger: cfg.Logger,
	})
	return d
}

// SetTargets replaces where each agent's callbacks go, at once and safely
// while delivering (serve's configuration reload): the next attempt of each
// delivery, retries included, goes to its agent's new target. targets must
// not be changed afterwards.
func (d *Deliverer) SetTargets(targets map[string]Target) { d.targets.Store(&targets) }

// gaugeBacklog reads how many deliveries are pending into the metrics.
func (d *Deliverer) gaugeBacklog(ctx context.Context) {
	if d.cfg.Metrics == nil {
		return
	}
	if n, err := d.cfg.DB.CountCallbackBacklog(ctx); err == nil {
		d.cfg.Metrics.Backlog.Set(float64(n))
	}
}

// send POSTs the representation to the agent's URL. An answer other than
// 2xx, or none, is a transient failure: the ledger's retry window, not a
// count of attempts, says when it fails for good.
func (d *Deliverer) send(ctx context.Context, row store.Callback) (delivery.Done, error) {
	status, reason := d.post(ctx, row)
	if status >= 200 && status < 300 {
		return delivery.Done{Code: status}, nil
	}
	return delivery.Done{}, &delivery.Failure{Class: delivery.Transient, Code: status, Reason: reason}
}

// post POSTs the representation to the agent's URL and returns the status
// (0 when there was no answer) and, unless 2xx, why it did not land.
func (d *Deliverer) post(ctx context.Context, row store.Callback) (int, string) {
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
