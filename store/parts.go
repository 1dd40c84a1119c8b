package store

// RequestParts are the rows a request's representation shows beside its
// own: the votes of its current round, the decision of its latest decided
// round, its newest execution and its newest callback delivery. A nil
// pointer is a row that does not exist.
type RequestParts struct {
	Votes     []Vote
	Decision  *Decision
	Execution *Execution
	Callback  *Callback
}

// History is what a lookup shows of a request beside its row: the decision
// of its latest decided round (nil if none), every execution oldest first,
// and its audit trail in chain order.
type History struct {
	Decision   *Decision
	Executions []Execution
	Events     []Event
}
