package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
)

// backend is the opened store and what wakes its waiters.
type backend struct {
	store    store.Store
	notifier store.Notifier
	// listener delivers PostgreSQL's notifications; nil for the embedded
	// store, which wakes its own subscribers after each commit.
	listener component
	// leader says whether this replica runs the fleet's sweeps; holdsLock
	// is what holds PostgreSQL's sweep lock, nil for the embedded store.
	leader    leadership
	holdsLock component
	// where names the store for people: PostgreSQL, or the embedded file.
	where string
}

// openBackend opens the store, applies its migrations and builds what
// delivers its wake-ups; newApp starts and stops them.
func openBackend(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*backend, error) {
	s, where, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	n, err := s.Migrate(ctx, logger.With("component", "migrate"))
	if errors.Is(err, postgres.ErrMigratePrivilege) {
		err = fmt.Errorf("%w; run `countersign migrate --app-role NAME` as the schema's owner, then start serve again", err)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if n > 0 {
		logger.Info("applied migrations", slog.Int("count", n))
	}
	b := &backend{store: s, where: where}
	notifier, listener, _ := s.Driver().Notifier(logger.With("component", "listener"))
	b.notifier = notifier
	b.leader, b.holdsLock = newLeadership(s.Driver(), logger.With("component", "leader"))
	if listener != nil {
		b.listener = listener // PostgreSQL's LISTEN connection, which serve starts and stops
	}
	if cfg.DatabaseURL == "" && !cfg.Local() {
		logger.Warn("COUNTERSIGN_DATABASE_URL is not set: using the embedded store, which serves one process on one machine",
			slog.String("path", where))
	}
	return b, nil
}

// openStore opens PostgreSQL when COUNTERSIGN_DATABASE_URL is set, else the
// embedded store in the data directory (created, owner only, if missing),
// and the ledger on it as the configuration sets it.
func openStore(ctx context.Context, cfg *config.Config) (*store.Ledger, string, error) {
	opts := ledgerOptions(cfg)
	if cfg.DatabaseURL != "" {
		db, err := postgres.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, "", fmt.Errorf("COUNTERSIGN_DATABASE_URL (%s): %w", config.DatabaseURLForm, err)
		}
		return store.NewLedger(db, opts), "PostgreSQL", nil
	}
	if cfg.DataDirErr() != nil {
		return nil, "", cfg.DataDirErr()
	}
	if err := makeDataDir(cfg.DataDir); err != nil {
		return nil, "", err
	}
	path := filepath.Join(cfg.DataDir, storeFile)
	d, err := embedded.Open(ctx, path)
	if err != nil {
		return nil, "", err
	}
	return store.NewLedger(d, opts), path, nil
}

// ledgerOptions are the ledger's knobs from the configuration: the agents
// whose requests queue callbacks.
func ledgerOptions(cfg *config.Config) store.Options {
	targets := cfg.CallbackTargets()
	names := make([]string, 0, len(targets))
	for name := range targets {
		names = append(names, name)
	}
	sort.Strings(names)
	return store.Options{CallbackAgents: names}
}

// makeDataDir creates the data directory, readable by its owner only: it
// holds the ledger and the local agent token.
func makeDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	return nil
}
