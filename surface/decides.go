package surface

import (
	"slices"

	"github.com/countersign/countersign/approvals"
)

// Decides reports whether a decision on tool's requests may be made on the
// surface named name: the tool lists it among its surfaces, or lists none
// (every surface then). A tool no longer configured (the zero Tool) is
// left to approvals, which refuses it as removed.
//
// Every surface checks it before it decides, so that a tool reviewed in
// one place cannot be decided from another: a card, link or page that
// reaches the wrong surface decides nothing (NotReviewedHere).
func Decides(t approvals.Tool, name string) bool {
	return t.Surfaces == nil || slices.Contains(t.Surfaces, name)
}

// NotReviewedHere is the refusal of a decision made on a surface its
// tool does not use: not_found, as a request a reviewer may not see, in
// words that say where to decide instead. shown is the surface as people
// call it ("Slack", "the console").
func NotReviewedHere(shown string) approvals.Refusal {
	return approvals.Refusal{Code: approvals.CodeNotFound,
		Message: "This tool's requests are not reviewed in " + shown + ", so nothing was recorded. Decide where its requests are shown."}
}
