package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Poll long-polls the request named by ref once: it answers when the
// request's version is past since, when the request is settled, or when
// wait (at most 60 s) ends, whichever comes first, with the request as it
// then stands. Wait is Poll in a loop; Poll is for a caller that reports
// each change as it comes (a progress bar, an MCP progress notification).
// It is retried as Get is.
func (c *Client) Poll(ctx context.Context, ref string, since int64, wait time.Duration) (*Request, error) {
	query := url.Values{"wait": {wait.Round(time.Millisecond).String()}, "since": {strconv.FormatInt(since, 10)}}
	a, err := c.call(ctx, http.MethodGet, requestPath(ref, "")+"?"+query.Encode(), nil, true)
	if err != nil {
		return nil, err
	}
	return decodeRequest(a)
}
