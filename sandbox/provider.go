// Package sandbox is a provider that performs nothing real, for the local
// demo tool, the executor's tests and benchmarks: it stores each write under its Idempotency-Key and answers a
// repeated key with the stored response, and it has knobs to ignore keys, to
// fail with a status or code, to hang, and to process a write and then drop
// the connection. Tests count the objects it holds.
package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/client"
)

// Behavior is how the provider answers a write.
type Behavior struct {
	// Status and Code make the provider refuse the write without storing it:
	// it answers Status (default 400 when only Code is set) with
	// {"error": {"code": Code}} when Code is set.
	Status int
	Code   string
	// CodeAtTop puts the code at the top level ({"code": …}) instead.
	CodeAtTop  bool
	RetryAfter string
	// Hang holds the request before processing until Release or the client
	// gives up; nothing is stored.
	Hang bool
	// HangAfterProcess stores the write, then holds the answer until Release
	// or the client gives up.
	HangAfterProcess bool
	// DropAfterProcess stores the write, then closes the connection without
	// answering.
	DropAfterProcess bool
	// Delay stores the write, then answers this much later, as a slow
	// provider does; Release or the client giving up ends the wait early.
	Delay time.Duration
	// StoreAfter takes this long before storing the write, and stores it
	// even when the client has given up meanwhile: a provider slowed by
	// load, finishing what it was sent.
	StoreAfter time.Duration
	// Times limits the behavior to the first Times writes of a key; 0 means
	// every write.
	Times int
}

// Object is one write the provider performed.
type Object struct {
	ID        string
	Key       string
	RequestID string
	Body      []byte
	At        time.Time
	// Method, Path (as on the request line) and Signature (the
	// Countersign-Signature header) are how the write arrived, so tests
	// can check what the signature covers.
	Method    string
	Path      string
	Signature string
}

// Provider is the fake. Its zero value is not usable; call New.
type Provider struct {
	// Secret, when set, makes the provider check Countersign-Signature as
	// a provider should, with client.VerifyRequest (v2: the method, the
	// path, the Idempotency-Key and the body); BadSignatures counts the
	// writes that failed the check (they are still processed, so tests see
	// them).
	Secret []byte

	mu           sync.Mutex
	ignoreKeys   bool
	objects      []Object
	stored       map[string][]byte // key → response body of its first object
	writes       map[string]int    // key → write requests seen
	def          Behavior
	perKey       map[string]Behavior
	precondition int
	preHang      bool
	preChecks    int
	release      chan struct{}

	badSignatures atomic.Int64
	received      atomic.Int64
	storing       atomic.Int64
}

// New returns an empty provider that honours keys.
func New() *Provider {
	return &Provider{
		stored:       make(map[string][]byte),
		writes:       make(map[string]int),
		perKey:       make(map[string]Behavior),
		precondition: http.StatusOK,
		release:      make(chan struct{}),
	}
}

// IgnoreKeys makes every write create a new object, as a provider that does
// not honour Idempotency-Key would.
func (p *Provider) IgnoreKeys(ignore bool) {
	p.mu.Lock()
	p.ignoreKeys = ignore
	p.mu.Unlock()
}

// Set sets the behavior for every key without one of its own.
func (p *Provider) Set(b Behavior) {
	p.mu.Lock()
	p.def = b
	p.mu.Unlock()
}

// SetFor sets the behavior for one key.
func (p *Provider) SetFor(key string, b Behavior) {
	p.mu.Lock()
	p.perKey[key] = b
	p.mu.Unlock()
}

// SetPrecondition sets the status GET /precondition answers (default 200).
func (p *Provider) SetPrecondition(status int) {
	p.mu.Lock()
	p.precondition = status
	p.mu.Unlock()
}

// HangPrecondition makes GET /precondition hold until Release or the client
// gives up.
func (p *Provider) HangPrecondition(hang bool) {
	p.mu.Lock()
	p.preHang = hang
	p.mu.Unlock()
}

// PreconditionChecks returns how many precondition checks arrived.
func (p *Provider) PreconditionChecks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.preChecks
}

// Release lets every hanging request go, and makes later hangs return at once.
func (p *Provider) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

// Objects returns how many objects the provider holds.
func (p *Provider) Objects() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.objects)
}

// ObjectsFor returns how many objects were created under key.
func (p *Provider) ObjectsFor(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, o := range p.objects {
		if o.Key == key {
			n++
		}
	}
	return n
}

// AllObjects returns a copy of every object, oldest first.
func (p *Provider) AllObjects() []Object {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Object(nil), p.objects...)
}

// Writes returns how many write requests arrived for key.
func (p *Provider) Writes(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes[key]
}

// Received returns how many write requests arrived in all.
func (p *Provider) Received() int { return int(p.received.Load()) }

// Storing returns how many writes slowed by StoreAfter are not stored yet,
// so a test can wait for a write that outlived its client to land.
func (p *Provider) Storing() int { return int(p.storing.Load()) }

// BadSignatures returns how many writes carried no valid signature.
func (p *Provider) BadSignatures() int { return int(p.badSignatures.Load()) }

// ServeHTTP answers GET /objects/K and GET /objects?key=K (the verify URL,
// in path and query form: 200 with the stored response, 404 when there is
// none), GET /writes?key=K (how many writes arrived under K), GET
// /precondition, and a write on any other path and method.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		switch {
		case r.URL.Path == "/writes":
			// How many writes arrived under a key: for tests that count
			// them from outside the process.
			key := r.URL.Query().Get("key")
			writeJSON(w, http.StatusOK, map[string]any{"key": key, "writes": p.Writes(key)})
			return
		case r.URL.Path == "/precondition":
			p.mu.Lock()
			status, hangs, release := p.precondition, p.preHang, p.release
			p.preChecks++
			p.mu.Unlock()
			if hangs {
				hang(r, release)
				return
			}
			w.WriteHeader(status)
			return
		default:
			key, found := objectKey(r.URL)
			p.mu.Lock()
			body, ok := p.stored[key]
			p.mu.Unlock()
			ok = ok && found
			if !ok {
				writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": "not_found"}})
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
			return
		}
	}
	p.write(w, r)
}

// objectKey is the key a verify request asks about: the one path segment
// after /objects/, percent-decoded exactly once (so %2F is part of the key
// and + is a plus), or else the key query parameter, form-decoded (so + is a
// space). Nothing is normalised: a key escaped for the wrong part of the URL
// does not match, as at a real provider.
func objectKey(u *url.URL) (string, bool) {
	if seg, ok := strings.CutPrefix(u.EscapedPath(), "/objects/"); ok {
		if strings.Contains(seg, "/") {
			return "", false
		}
		key, err := url.PathUnescape(seg)
		return key, err == nil
	}
	q := u.Query()
	return q.Get("key"), q.Has("key")
}

func (p *Provider) write(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	p.received.Add(1)
	if p.Secret != nil {
		if client.VerifyRequest(p.Secret, r, body, 5*time.Minute) != nil {
			p.badSignatures.Add(1)
		}
	}
	key := r.Header.Get("Idempotency-Key")

	p.mu.Lock()
	p.writes[key]++
	b, own := p.perKey[key]
	if !own {
		b = p.def
	}
	if b.Times > 0 && p.writes[key] > b.Times {
		b = Behavior{}
	}
	if b.StoreAfter > 0 && b.Status == 0 && b.Code == "" && !b.Hang {
		p.storing.Add(1) // with the write's count, so no moment shows neither
	}
	release := p.release
	p.mu.Unlock()

	if b.Hang {
		hang(r, release)
		return
	}
	if b.Status != 0 || b.Code != "" {
		status := b.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		if b.RetryAfter != "" {
			w.Header().Set("Retry-After", b.RetryAfter)
		}
		var answer map[string]any
		switch {
		case b.Code == "":
			answer = map[string]any{"message": http.StatusText(status)}
		case b.CodeAtTop:
			answer = map[string]any{"code": b.Code, "message": "fake " + b.Code}
		default:
			answer = map[string]any{"error": map[string]any{"code": b.Code, "message": "fake " + b.Code}}
		}
		writeJSON(w, status, answer)
		return
	}

	if b.StoreAfter > 0 {
		defer p.storing.Add(-1)
		time.Sleep(b.StoreAfter) // not cut short when the client leaves
	}
	p.mu.Lock()
	stored, seen := p.stored[key]
	if seen && !p.ignoreKeys {
		p.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(stored)
		return
	}
	id := "obj_" + strconv.Itoa(len(p.objects)+1)
	resp, _ := json.Marshal(map[string]any{"id": id, "key": key, "status": "created"})
	p.objects = append(p.objects, Object{ID: id, Key: key, RequestID: r.Header.Get("Countersign-Request-Id"), Body: body, At: time.Now(),
		Method: r.Method, Path: r.URL.EscapedPath(), Signature: r.Header.Get(client.SignatureHeader)})
	if !seen {
		p.stored[key] = resp
	}
	p.mu.Unlock()

	switch {
	case b.HangAfterProcess:
		hang(r, release)
		return
	case b.Delay > 0:
		timer := time.NewTimer(b.Delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-release:
		case <-r.Context().Done():
			return
		}
	case b.DropAfterProcess:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(resp)
}

func hang(r *http.Request, release <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Noop is a provider that answers every request 200 {"id": …} and remembers
// nothing: the benchmark's provider, the same as the River baseline's.
func Noop() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"obj_%d"}`, n.Add(1))
	})
}
