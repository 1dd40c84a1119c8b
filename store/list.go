package store

import "time"

// ListRequestsParams selects one page of Reader.ListRequests: the requests
// that match every filter set, in listing order (newest first: created_at,
// then id, both descending), after After.
type ListRequestsParams struct {
	// RequestedBy limits the page to one agent's requests; "" is every
	// agent's (an admin's view).
	RequestedBy string
	// Status, Tool and RunID, when not empty, must equal the request's.
	Status RequestStatus
	Tool   string
	RunID  string
	// Settled, when set, must equal whether the request is settled
	// (Settled, of its status and its latest execution's state).
	Settled *bool
	// After, when set, is where the previous page ended: only requests
	// after it in listing order are read.
	After *RequestPosition
	// Limit is the most requests to return; less than 1 returns none.
	Limit int
}

// RequestPosition is a request's place in listing order. Neither field ever
// changes, so a position stays put while requests are added: a listing that
// continues after one neither repeats nor skips a request that was there
// when it started.
type RequestPosition struct {
	CreatedAt time.Time
	ID        string
}

// PositionOf returns where req stands in listing order.
func PositionOf(req Request) RequestPosition {
	return RequestPosition{CreatedAt: req.CreatedAt, ID: req.ID}
}
