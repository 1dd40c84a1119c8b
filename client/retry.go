package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// call sends one request and, when retry is set, sends the same bytes again
// after a network error or an answer retryable says may change, until ctx
// ends. An answer of 400 or more is an *APIError. When ctx ends after a
// failed attempt, the error wraps both ctx's error and that failure.
func (c *Client) call(ctx context.Context, method, path string, body []byte, retry bool) (answer, error) {
	if c.badURL != nil {
		return answer{}, c.badURL
	}
	backoff := c.minBackoff
	var last error // the newest failure of an attempt, for when ctx ends
	for attempts := 1; ; attempts++ {
		a, err := c.once(ctx, method, path, body)
		var pause time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			if !errors.Is(err, ctx.Err()) {
				last = err // it failed on its own as ctx ended
			}
			return answer{}, gaveUp(ctx, method, path, attempts, last)
		case err != nil:
			if !retry {
				return answer{}, fmt.Errorf("countersign: %s %s: %w", method, path, err)
			}
			pause = backoff
		case a.status < 400:
			return a, nil
		default:
			apiErr := decodeError(a)
			if !retry || !retryable(method, a.status) {
				return answer{}, apiErr
			}
			err, pause = apiErr, max(backoff, apiErr.RetryAfter)
		}
		last = err
		// Jitter spreads the retries of many agents after one outage.
		pause = pause/2 + rand.N(pause/2+1)
		select {
		case <-ctx.Done():
			return answer{}, gaveUp(ctx, method, path, attempts, last)
		case <-time.After(pause):
		}
		backoff = min(2*backoff, c.maxBackoff)
	}
}

// retryable reports whether an answer with status may be different if the
// same call is sent again. A 503 (the database out of reach) may be, for
// every call that retries; a 500 only for a read, which changes nothing
// however often it is sent.
func retryable(method string, status int) bool {
	switch status {
	case http.StatusServiceUnavailable:
		return true
	case http.StatusInternalServerError:
		return method == http.MethodGet
	}
	return false
}

// gaveUp is the error of a call whose ctx ended: ctx's error and, when an
// attempt had failed before, that failure, so the caller learns why the
// retries never succeeded. errors.Is and errors.As reach both.
func gaveUp(ctx context.Context, method, path string, attempts int, last error) error {
	if last == nil {
		return fmt.Errorf("countersign: %s %s: %w", method, path, ctx.Err())
	}
	return fmt.Errorf("countersign: %s %s: gave up after %d attempts: %w: %w", method, path, attempts, ctx.Err(), last)
}
