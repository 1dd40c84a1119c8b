package store

// ServeBatch has b serve ps as one batch, as if they had all arrived while
// the previous batch ran, and returns each caller's answer.
func ServeBatch(b *IntakeBatcher, ps []NewRequest) ([]InsertResult, []error) {
	calls := make([]*batchCall[NewRequest, InsertResult], len(ps))
	for i, p := range ps {
		calls[i] = &batchCall[NewRequest, InsertResult]{in: p, done: make(chan batchResult[InsertResult], 1)}
	}
	b.serve(calls)
	results, errs := make([]InsertResult, len(ps)), make([]error, len(ps))
	for i, c := range calls {
		r := <-c.done
		results[i], errs[i] = r.out, r.err
	}
	return results, errs
}
