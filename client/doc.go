// Package client is the Go client of countersign's agent hook: an agent asks
// for a write, waits for the human decision and the outcome, and never
// hand-writes the HTTP calls, the key or a poll loop.
//
// The three calls an agent makes:
//
//	c := client.New("https://countersign.internal", os.Getenv("COUNTERSIGN_TOKEN"))
//	req, err := c.Do(ctx, client.Intent{RunID: run, Step: 6, Tool: "billing.credit", Effect: effect})
//	switch {
//	case errors.Is(err, client.ErrInvalidEffect): // fix the effect, do not retry as is
//	case errors.Is(err, client.ErrDeniedByPolicy): // the policy refuses it, on every retry
//	case err != nil: // the context ended, or countersign refused
//	case req.Succeeded(): // the write happened, once
//	}
//
// Every retry resends the same intent, so it lands on the same key: a
// network error or a 503 never turns one write into two. Key computes that
// key offline, exactly as the hook and `countersign key` do. The reads (Get,
// Wait, Tools) are resent after a 500 too; Cancel and Redrive are never
// resent, as a first attempt may have landed.
//
// A call that retried until its context ended says how many attempts it
// made and wraps both the context's error and the last failure:
//
//	countersign: POST /v1/requests: gave up after 7 attempts: context deadline exceeded: Post "…": dial tcp …: connect: connection refused
//
// errors.Is(err, context.DeadlineExceeded) holds, and so does errors.Is or
// errors.As for the cause (syscall.ECONNREFUSED, *net.OpError, or an
// *APIError such as ErrUnavailable). A refusal's *APIError carries every
// value at fault and the server's request id, which its message quotes.
// Every call sends User-Agent: countersign-go/<Version()>.
//
// Providers and agents check that a dispatch or a callback came through the
// gate, as it was sent, with VerifyRequest (docs/CALLBACKS.md).
package client
