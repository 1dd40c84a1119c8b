package main

import (
	"fmt"
	"io"
	"os"

	"github.com/countersign/countersign/approvals"
)

// printKey reads an intent as an agent would post it, from the one file
// named in files or else from stdin, and prints the key the hook would store:
// its idempotency_key if it has one (and the hook would take it), else the
// derived key.
func printKey(files []string, stdin io.Reader, stdout io.Writer) error {
	source, name := stdin, "stdin"
	if len(files) == 1 && files[0] != "-" {
		f, err := os.Open(files[0])
		if err != nil {
			return err
		}
		defer f.Close()
		source, name = f, files[0]
	}
	body, err := io.ReadAll(io.LimitReader(source, approvals.MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if len(body) > approvals.MaxBodyBytes {
		return fmt.Errorf("the intent is larger than 1 MiB")
	}
	in, err := approvals.DecodeIntent(body)
	if err != nil {
		return fmt.Errorf("%w", err)
	}
	derived, err := approvals.Key(in.Basis())
	if err != nil {
		return err
	}
	key := derived
	if in.IdempotencyKey != "" {
		// The hook's whole rule: a wa_ key must be the derived one.
		if err := approvals.CheckClientKey(in.IdempotencyKey, derived); err != nil {
			return fmt.Errorf("idempotency_key: %w", err)
		}
		key = in.IdempotencyKey
	}
	_, err = fmt.Fprintln(stdout, key)
	return err
}
