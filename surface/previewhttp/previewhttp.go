// Package previewhttp asks a tool's preview endpoint over HTTP: the
// surface port's PreviewFetcher (surface.PreviewFetcher). A preview is
// signed as a dispatch is (docs/CALLBACKS.md): Countersign-Signature over
// the time, the body, the method, the path and the Idempotency-Key, with
// every secret of the tool's dispatch, so a provider checks it with
// client.VerifyRequest as it checks a dispatch.
package previewhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/internal/signature"
	"github.com/countersign/countersign/store"
)

// Client is the preview endpoints' HTTP client.
type Client struct {
	http *http.Client
}

// New returns a Client. It follows no redirect (a preview goes only where
// the operator configured it) and no call outlives the longest timeout a
// preview may have.
func New() *Client {
	return &Client{http: &http.Client{
		Timeout: approvals.MaxPreviewTimeout + time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("a preview endpoint may not redirect")
		},
	}}
}

// FetchPreview POSTs body to ep.URL, signed, and returns the answer's
// status and at most limit+1 bytes of its body.
func (c *Client) FetchPreview(ctx context.Context, ep approvals.PreviewEndpoint, req store.Request, body []byte, limit int64) (int, []byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json")
	r.Header.Set(signature.IdempotencyKeyHeader, req.Key)
	r.Header.Set("Countersign-Request-Id", req.ID)
	r.Header.Set("Countersign-Purpose", "preview")
	r.Header.Set(signature.Header, signature.Sign(ep.Secrets, time.Now(), signature.RequestOf(r), body))
	resp, err := c.http.Do(r)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	return resp.StatusCode, answer, err
}
