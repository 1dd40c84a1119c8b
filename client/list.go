package client

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/countersign/countersign/wire"
)

// ListParams selects the requests List returns; every field left zero
// filters nothing. The zero value is the agent's 20 newest requests.
type ListParams struct {
	Status Status
	Tool   string
	RunID  string
	// Settled, when set, keeps only the requests whose Settled is *Settled.
	Settled *bool
	// Limit is how many requests a page holds, 1 to 100; 0 is the server's
	// default, 20.
	Limit int
	// Cursor continues a listing after the page whose NextCursor it is; ""
	// starts from the newest request.
	Cursor string
}

// Page is one page of a listing.
type Page struct {
	// Requests are newest first, each as Get returns it.
	Requests []Request
	// NextCursor continues the listing after this page (ListParams.Cursor);
	// "" when no request follows.
	NextCursor string
}

// List returns one page of the requests this agent made (an admin agent:
// every agent's) that match p, newest first. Paging is by keyset: following
// NextCursor neither repeats nor skips a request that existed when the
// listing began, however many arrive meanwhile. It only reads, so a network
// error, a 503 or a 500 is retried until ctx ends.
func (c *Client) List(ctx context.Context, p ListParams) (*Page, error) {
	query := url.Values{}
	for name, value := range map[string]string{"status": string(p.Status), "tool": p.Tool, "run_id": p.RunID, "cursor": p.Cursor} {
		if value != "" {
			query.Set(name, value)
		}
	}
	if p.Settled != nil {
		query.Set("settled", strconv.FormatBool(*p.Settled))
	}
	if p.Limit != 0 {
		query.Set("limit", strconv.Itoa(p.Limit))
	}
	path := "/v1/requests"
	if len(query) > 0 {
		path += "?" + query.Encode()
	}
	a, err := c.call(ctx, http.MethodGet, path, nil, true)
	if err != nil {
		return nil, err
	}
	var body wire.RequestPage
	if err := json.Unmarshal(a.body, &body); err != nil {
		return nil, fmt.Errorf("client: decoding the list: %w", err)
	}
	page := &Page{Requests: body.Data}
	if body.NextCursor != nil {
		page.NextCursor = *body.NextCursor
	}
	return page, nil
}

// ListAll returns every request that matches p, from p.Cursor on, for a
// range loop; it asks for the next page as the loop reaches it:
//
//	for req, err := range c.ListAll(ctx, client.ListParams{RunID: run}) {
//		if err != nil {
//			return err
//		}
//		…
//	}
//
// A page that fails (after List's retries) ends the loop with its error.
func (c *Client) ListAll(ctx context.Context, p ListParams) iter.Seq2[*Request, error] {
	return func(yield func(*Request, error) bool) {
		for {
			page, err := c.List(ctx, p)
			if err != nil {
				yield(nil, err)
				return
			}
			for i := range page.Requests {
				if !yield(&page.Requests[i], nil) {
					return
				}
			}
			if page.NextCursor == "" {
				return
			}
			p.Cursor = page.NextCursor
		}
	}
}
