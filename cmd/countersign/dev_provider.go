package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/receipt"
)

const devProviderUsage = `usage: countersign dev-provider [--listen ADDR] [--secret SECRET] [--jwks URL]

Serves a provider on this machine for trying tools out. It takes a write
(any method but GET, on any path) as a provider should:

  - a write countersign sends must carry a valid Countersign-Signature
    (the dispatch secret: --secret, else COUNTERSIGN_DISPATCH_SECRET;
    several, comma-separated, while one is rotated);
  - a write carrying a Countersign-Receipt (an agent-executed tool's) must
    carry a receipt that countersign signed, not expired, for its
    Idempotency-Key and for exactly its body; the public keys come from
    --jwks, else $COUNTERSIGN_URL/.well-known/jwks.json, else serve's
    COUNTERSIGN_LISTEN, else http://127.0.0.1:8080;
  - a write with neither is refused.

A refusal is 401 (signature) or 403 (receipt) with {"error": {"code",
"message"}} naming why. An accepted write is answered 201 with a JSON body;
the same Idempotency-Key again is answered with the first answer, and
creates nothing. Every write that arrived, refused ones too, is kept in
memory and listed by GET /writes (?key=K for one key's), newest last, and
told on standard error. It runs until SIGINT or SIGTERM.

  --listen ADDR   the address to listen on (default 127.0.0.1:9090)
  --secret TEXT   the dispatch secret (default: COUNTERSIGN_DISPATCH_SECRET)
  --jwks URL      countersign's JWKS, for receipts
`

// devProviderListen is where dev-provider listens unless told otherwise:
// the address countersign init's HTTP tool dispatches to.
const devProviderListen = initProvider

// devProviderMaxBody bounds a write's body.
const devProviderMaxBody = 1 << 20

// devProviderOptions are dev-provider's arguments.
type devProviderOptions struct {
	listen  string
	secrets [][]byte
	jwks    string
}

func parseDevProviderArgs(args []string, getenv func(string) string, stdout, stderr io.Writer) (opts devProviderOptions, code int, ok bool) {
	opts.listen = devProviderListen
	secret := getenv("COUNTERSIGN_DISPATCH_SECRET")
	if _, code, ok := parseArgs("dev-provider", devProviderUsage, args, 0, func(fs *flag.FlagSet) {
		fs.StringVar(&opts.listen, "listen", opts.listen, "")
		fs.StringVar(&secret, "secret", secret, "")
		fs.StringVar(&opts.jwks, "jwks", "", "")
	}, stdout, stderr); !ok {
		return opts, code, false
	}
	if secret == "" {
		fmt.Fprintf(stderr, "countersign dev-provider: no dispatch secret to check signatures with: give --secret, or set COUNTERSIGN_DISPATCH_SECRET (countersign.env of countersign init holds one)\n\n%s", devProviderUsage)
		return opts, 2, false
	}
	for _, s := range strings.Split(secret, ",") {
		if s != "" {
			opts.secrets = append(opts.secrets, []byte(s))
		}
	}
	if opts.jwks == "" {
		opts.jwks = devProviderJWKS(getenv)
	}
	return opts, 0, true
}

// devProviderJWKS is where serve publishes its receipt keys, from the
// environment countersign init writes.
func devProviderJWKS(getenv func(string) string) string {
	base := strings.TrimRight(getenv("COUNTERSIGN_URL"), "/")
	if base == "" {
		base = localBase(getenv("COUNTERSIGN_LISTEN"))
	}
	if base == "" {
		base = "http://" + initListen
	}
	return base + "/.well-known/jwks.json"
}

// devProvider serves dev-provider's listener until ctx ends.
func devProvider(ctx context.Context, opts devProviderOptions, stderr io.Writer) error {
	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return err
	}
	p := newDevProviderHandler(opts.secrets, opts.jwks, stderr)
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, IdleTimeout: time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stderr, "countersign dev-provider listening on http://%s\n  writes it got: GET http://%s/writes\n  receipts checked against %s\n",
		ln.Addr(), ln.Addr(), opts.jwks)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	return nil
}

// devWrite is one write dev-provider got, as GET /writes lists it.
type devWrite struct {
	N        int       `json:"n"`
	At       time.Time `json:"at"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Key      string    `json:"idempotency_key"`
	Body     any       `json:"body"` // the JSON it held, else its text
	Status   int       `json:"status"`
	Replayed bool      `json:"replayed,omitempty"`
	// Signature is "valid", "none", or "bad"; Receipt is the receipt's
	// claims when one verified.
	Signature string          `json:"signature"`
	Receipt   *receipt.Claims `json:"receipt,omitempty"`
	// Refused is the code of a refusal, and Why its words.
	Refused string `json:"refused,omitempty"`
	Why     string `json:"why,omitempty"`
	// Answer is the body it was answered with, for a write taken.
	Answer json.RawMessage `json:"answer,omitempty"`
}

// devAnswer is the first answer to a key, repeated to its repeats.
type devAnswer struct {
	status int
	body   []byte
}

// devProviderHandler is dev-provider's HTTP handler.
type devProviderHandler struct {
	secrets [][]byte
	jwksURL string
	client  *http.Client
	log     io.Writer

	mu       sync.Mutex
	verifier *receipt.Verifier
	writes   []devWrite
	answers  map[string]devAnswer
	created  int
}

func newDevProviderHandler(secrets [][]byte, jwksURL string, log io.Writer) *devProviderHandler {
	return &devProviderHandler{secrets: secrets, jwksURL: jwksURL, log: log,
		client: &http.Client{Timeout: 5 * time.Second}, answers: map[string]devAnswer{}}
}

func (p *devProviderHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if r.URL.Path != "/writes" {
			devRefuse(w, http.StatusNotFound, "not_found", "GET /writes lists the writes; a write is any other method, on any path")
			return
		}
		key, filter := r.URL.Query().Get("key"), r.URL.Query().Has("key")
		p.mu.Lock()
		list := []devWrite{}
		for _, wr := range p.writes {
			if !filter || wr.Key == key {
				list = append(list, wr)
			}
		}
		p.mu.Unlock()
		devJSON(w, http.StatusOK, map[string]any{"writes": list})
		return
	}
	p.write(w, r)
}

// write checks a write, answers it, and keeps it.
func (p *devProviderHandler) write(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, devProviderMaxBody+1))
	if err != nil {
		return
	}
	got := devWrite{At: time.Now().UTC(), Method: r.Method, Path: r.URL.EscapedPath(), Key: r.Header.Get("Idempotency-Key"), Signature: "none"}
	var parsed any
	if json.Unmarshal(body, &parsed) == nil {
		got.Body = parsed
	} else {
		got.Body = string(body)
	}
	refuse := func(status int, code, why string) {
		got.Status, got.Refused, got.Why = status, code, why
		p.keep(got)
		devRefuse(w, status, code, why)
	}
	if len(body) > devProviderMaxBody {
		refuse(http.StatusRequestEntityTooLarge, "too_large", "the body is over 1 MiB")
		return
	}
	signed := r.Header.Get(client.SignatureHeader) != ""
	if signed {
		got.Signature = "bad"
		for _, s := range p.secrets {
			if client.VerifyRequest(s, r, body, 0) == nil {
				got.Signature = "valid"
				break
			}
		}
		if got.Signature != "valid" {
			refuse(http.StatusUnauthorized, "bad_signature",
				"the Countersign-Signature does not match this method, path, Idempotency-Key and body under the dispatch secret, or is over 5 minutes old: is COUNTERSIGN_DISPATCH_SECRET serve's?")
			return
		}
	}
	if token := strings.TrimSpace(r.Header.Get(receipt.Header)); token != "" {
		claims, status, code, why := p.checkReceipt(r.Context(), token, got.Key, body)
		if code != "" {
			refuse(status, code, why)
			return
		}
		got.Receipt = &claims
	} else if !signed {
		refuse(http.StatusUnauthorized, "unsigned",
			"neither a Countersign-Signature (a write countersign sends) nor a Countersign-Receipt (a write an agent performs with its approval's receipt)")
		return
	}
	if got.Key == "" {
		refuse(http.StatusBadRequest, "missing_idempotency_key", "a write needs an Idempotency-Key: the request's key")
		return
	}

	p.mu.Lock()
	answer, seen := p.answers[got.Key]
	if !seen {
		p.created++
		raw, _ := json.Marshal(map[string]any{"id": "dev_" + strconv.Itoa(p.created), "status": "created",
			"idempotency_key": got.Key, "path": got.Path, "received_at": got.At})
		answer = devAnswer{status: http.StatusCreated, body: raw}
		p.answers[got.Key] = answer
	}
	got.Status, got.Replayed, got.Answer = answer.status, seen, answer.body
	p.keepLocked(got)
	p.mu.Unlock()
	if seen {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(answer.status)
	_, _ = w.Write(append(answer.body, '\n'))
}

// checkReceipt verifies a write's receipt against countersign's JWKS,
// fetched at the first receipt and again when a receipt names a key it
// does not hold (serve's key rotated, or another serve's). A refusal has
// its status, code and words.
func (p *devProviderHandler) checkReceipt(ctx context.Context, token, key string, body []byte) (receipt.Claims, int, string, string) {
	want := receipt.Want{Key: key, Body: body}
	var claims receipt.Claims
	var err error
	for fetched := false; ; fetched = true {
		p.mu.Lock()
		v := p.verifier
		p.mu.Unlock()
		if v == nil || fetched {
			if v, err = receipt.FetchVerifier(ctx, p.client, p.jwksURL); err != nil {
				return claims, http.StatusServiceUnavailable, "jwks_unavailable",
					fmt.Sprintf("fetching countersign's public keys: %v (is serve running? --jwks names its /.well-known/jwks.json)", err)
			}
			p.mu.Lock()
			p.verifier = v
			p.mu.Unlock()
		}
		claims, err = v.Verify(token, want)
		if !errors.Is(err, receipt.ErrUnknownKey) || fetched {
			break
		}
	}
	if err == nil {
		return claims, 0, "", ""
	}
	for _, r := range []struct {
		err  error
		code string
		why  string
	}{
		{receipt.ErrExpired, "receipt_expired", "the receipt has expired: the approval's outcome_timeout passed"},
		{receipt.ErrOtherKey, "receipt_other_key", "the receipt approves a request with another key than this write's Idempotency-Key"},
		{receipt.ErrOtherTool, "receipt_other_tool", "the receipt approves a write of another tool"},
		{receipt.ErrEffect, "receipt_effect_mismatch", "the body is not the approved effect: its canonical SHA-256 differs from the receipt's effect_sha256"},
		{receipt.ErrSignature, "receipt_bad_signature", "the receipt's signature does not match: it was not signed by countersign, or was changed"},
		{receipt.ErrUnknownKey, "receipt_unknown_key", "the receipt is signed by a key countersign's JWKS does not hold"},
		{receipt.ErrMalformed, "receipt_malformed", "the Countersign-Receipt is not a receipt countersign signs"},
	} {
		if errors.Is(err, r.err) {
			return claims, http.StatusForbidden, r.code, r.why
		}
	}
	return claims, http.StatusForbidden, "receipt_invalid", err.Error()
}

// keep records a write and tells it on the log.
func (p *devProviderHandler) keep(wr devWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keepLocked(wr)
}

func (p *devProviderHandler) keepLocked(wr devWrite) {
	wr.N = len(p.writes) + 1
	p.writes = append(p.writes, wr)
	how := "signature " + wr.Signature
	if wr.Receipt != nil {
		how += ", receipt valid (approved by " + wr.Receipt.DecidedBy + ")"
	}
	switch {
	case wr.Refused != "":
		how = "refused: " + wr.Refused
	case wr.Replayed:
		how += "; a repeat, answered as the first"
	}
	fmt.Fprintf(p.log, "dev-provider: %s %s key=%s -> %d (%s)\n", wr.Method, wr.Path, wr.Key, wr.Status, how)
}

func devRefuse(w http.ResponseWriter, status int, code, message string) {
	devJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": message}})
}

func devJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
