package main

import (
	"context"
	"fmt"
	"io"
)

// migrate applies pending migrations to the configured store and exits;
// serve does the same at start.
func migrate(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	s, where, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := s.Migrate(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migrations to %s\n", n, where)
	return nil
}
