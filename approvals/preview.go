package approvals

import "time"

// Bounds of a tool's preview endpoint.
const (
	DefaultPreviewTimeout = 2 * time.Second
	MaxPreviewTimeout     = 10 * time.Second
)

// PreviewEndpoint is where a tool's previews are asked: a POST of the
// request's tool, key and effect to URL, signed as a dispatch is with each
// of Secrets (never logged), answered within Timeout.
type PreviewEndpoint struct {
	URL     string
	Timeout time.Duration
	Secrets [][]byte
}

// String names the endpoint without its secrets.
func (p PreviewEndpoint) String() string {
	return "preview endpoint (timeout " + p.Timeout.String() + ")"
}
