package store

// Card is the Slack message showing one round of a request.
type Card struct {
	RequestID     string
	Round         int
	Channel       string
	TS            string
	RenderedState string
	Settled       bool
}

// MarkCardRenderedParams is the state a request round's card now shows.
type MarkCardRenderedParams struct {
	RequestID string
	Round     int
	State     string
	Settled   bool
}
