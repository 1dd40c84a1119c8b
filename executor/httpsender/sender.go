package httpsender

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/executor/sender"
)

// maxResponseBytes bounds what is kept of a provider's answer.
const maxResponseBytes = 1 << 20

// Sender sends a tool's approved writes to one URL.
type Sender struct {
	Method  string            // default POST
	URL     string            // never logged: it may carry a secret
	Headers map[string]string // already expanded from ${VAR}; never logged
	// Secrets sign every dispatch (Sign): several while one is rotated.
	// Never logged.
	Secrets [][]byte
	// Client sends; it must not follow redirects (NewClient's does not).
	// nil is a NewClient of its own.
	Client *http.Client
}

// Send performs one HTTP call of the exact approved bytes. The request is
// never replayed by the transport: it has no GetBody, so a connection that
// drops after the body was written surfaces as an ambiguous outcome rather
// than as a silent second write.
func (s *Sender) Send(ctx context.Context, w sender.Write) sender.Attempt {
	return Classify(s.do(ctx, w), time.Now())
}

// Outcome is CodeOutcome.
func (s *Sender) Outcome(code string) (sender.Outcome, bool) { return CodeOutcome(code) }

func (s *Sender) do(ctx context.Context, w sender.Write) Answer {
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				written.Store(true)
			}
		},
	})
	method := s.Method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL, bytes.NewReader(w.Body))
	if err != nil {
		return Answer{Err: err}
	}
	req.GetBody = nil
	for k, v := range s.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", w.Key)
	req.Header.Set("Countersign-Request-Id", w.RequestID)
	req.Header.Set(SignatureHeader, Sign(s.Secrets, time.Now(), req, w.Body))
	client := s.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Answer{Err: err, Written: written.Load()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return Answer{Err: err, Written: true}
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: body}
}
