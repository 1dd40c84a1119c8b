package httpsender

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/countersign/countersign/executor/sender"
	"github.com/countersign/countersign/internal/outbound"
)

// Endpoint is a URL read for a write: a verify URL (Verify) or a
// precondition (Check). URL is a URLTemplate: each {key} is replaced by
// the key, escaped for the part of the URL it is in.
type Endpoint struct {
	URL     string
	Headers map[string]string
	// Client reads; nil is a NewClient of the package's own.
	Client *http.Client

	// parsed once by Bind; nil in an Endpoint built elsewhere
	tmpl *URLTemplate
	err  error
}

// Bind returns a copy of e that reads through client (unless e has a
// client of its own), its template parsed once; nil for nil.
func (e *Endpoint) Bind(client *http.Client) *Endpoint {
	if e == nil {
		return nil
	}
	c := *e
	if c.Client == nil {
		c.Client = client
	}
	c.tmpl, c.err = ParseURLTemplate(c.URL)
	return &c
}

// Err is why the endpoint's URL template cannot be used, or nil.
func (e *Endpoint) Err() error {
	if e.tmpl == nil && e.err == nil {
		_, err := ParseURLTemplate(e.URL)
		return err
	}
	return e.err
}

// URLFor returns the endpoint's URL for key.
func (e Endpoint) URLFor(key string) (string, error) {
	if e.tmpl == nil && e.err == nil {
		e.tmpl, e.err = ParseURLTemplate(e.URL)
	}
	if e.err != nil {
		// Not the URL itself: it may carry a secret from the environment.
		return "", fmt.Errorf("unusable URL template: %w", e.err)
	}
	return e.tmpl.Expand(key), nil
}

// Verify reads the endpoint as a verify URL: 200 the provider has the
// write, 404 it does not; anything else, or no answer, cannot say.
func (e *Endpoint) Verify(ctx context.Context, w sender.Write) (sender.Verification, error) {
	status, body, err := e.get(ctx, w)
	switch {
	case err != nil:
		return sender.Verification{}, errors.New("the verify URL could not be read: " + outbound.Describe(err))
	case status == http.StatusOK:
		return sender.Verification{Found: true, Status: status, Body: body, ProviderRef: parseBody(body).ref}, nil
	case status == http.StatusNotFound:
		return sender.Verification{Status: status, Body: body}, nil
	}
	return sender.Verification{}, errors.New("the verify URL answered " + strconv.Itoa(status))
}

// Check reads the endpoint as a precondition: only a 2xx lets the write go
// ahead. An unreachable precondition counts as failed.
func (e *Endpoint) Check(ctx context.Context, w sender.Write) error {
	status, _, err := e.get(ctx, w)
	switch {
	case err != nil:
		return errors.New("the precondition check could not be made: " + outbound.Describe(err))
	case status < 200 || status > 299:
		return errors.New("the precondition check answered " + strconv.Itoa(status))
	}
	return nil
}

func (e *Endpoint) get(ctx context.Context, w sender.Write) (status int, body []byte, err error) {
	u, err := e.URLFor(w.Key)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Idempotency-Key", w.Key)
	req.Header.Set("Countersign-Request-Id", w.RequestID)
	client := e.Client
	if client == nil {
		client = defaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	return resp.StatusCode, body, err
}
