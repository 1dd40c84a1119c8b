package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/countersign/countersign/store"
)

// migrate applies pending migrations and exits; serve does the same at start.
func migrate(ctx context.Context, getenv func(string) string, stdout io.Writer) error {
	url := getenv("COUNTERSIGN_DATABASE_URL")
	if url == "" {
		return errors.New("COUNTERSIGN_DATABASE_URL is not set")
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.Migrate(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migrations\n", n)
	return nil
}
