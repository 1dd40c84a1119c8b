package main

import (
	"fmt"
	"io"

	"github.com/countersign/countersign/approvals"
)

// printKey reads an intent as an agent would post it and prints the key the
// hook would store: its idempotency_key if it has one, else the derived key.
func printKey(stdin io.Reader, stdout io.Writer) error {
	body, err := io.ReadAll(io.LimitReader(stdin, approvals.MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	if len(body) > approvals.MaxBodyBytes {
		return fmt.Errorf("the intent is larger than 1 MiB")
	}
	in, err := approvals.DecodeIntent(body)
	if err != nil {
		return fmt.Errorf("%w", err)
	}
	key := in.IdempotencyKey
	if key == "" {
		if key, err = approvals.Key(in.Basis()); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintln(stdout, key)
	return err
}
