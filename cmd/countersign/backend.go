package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
)

// backend is the opened store and what wakes its waiters.
type backend struct {
	store    store.Store
	notifier store.Notifier
	// replays batches the read every intent starts with; nil reads each
	// alone (the embedded store reads in-process, with no round trip to share).
	replays *store.ReplayReader
	// where names the store for people: PostgreSQL, or the embedded file.
	where string

	stopLoops context.CancelFunc
	loops     sync.WaitGroup // the listener's and the replay reader's
}

// openBackend opens the store, applies its migrations and starts what
// delivers its wake-ups. The PostgreSQL listener and the replay reader run
// until close, not until ctx ends: what is still finishing on shutdown needs
// them.
func openBackend(ctx context.Context, cfg *Config, logger *slog.Logger) (*backend, error) {
	s, where, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	n, err := s.Migrate(ctx, logger.With("component", "migrate"))
	if errors.Is(err, store.ErrMigratePrivilege) {
		err = fmt.Errorf("%w; run `countersign migrate --app-role NAME` as the schema's owner, then start serve again", err)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if n > 0 {
		logger.Info("applied migrations", slog.Int("count", n))
	}
	loopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	b := &backend{store: s, where: where, stopLoops: stop}
	switch s := s.(type) {
	case *store.DB:
		listener := store.NewListener(s, logger.With("component", "listener"))
		b.loops.Go(func() { listener.Run(loopCtx) })
		b.notifier = listener
		b.replays = store.NewReplayReader(s.Pool, replayReaders, replayMaxBatch)
		b.loops.Go(func() { b.replays.Run(loopCtx) })
	case *embedded.Store:
		b.notifier = s // it wakes its own subscribers after each commit
		if !cfg.Local() {
			logger.Warn("COUNTERSIGN_DATABASE_URL is not set: using the embedded store, which serves one process on one machine",
				slog.String("path", where))
		}
	}
	return b, nil
}

// close stops the listener and the replay reader, then closes the store.
func (b *backend) close() {
	b.stopLoops()
	b.loops.Wait()
	b.store.Close()
}

// openStore opens PostgreSQL when COUNTERSIGN_DATABASE_URL is set, else the
// embedded store in the data directory (created, owner only, if missing).
func openStore(ctx context.Context, cfg *Config) (store.Store, string, error) {
	if cfg.DatabaseURL != "" {
		db, err := store.Open(ctx, cfg.DatabaseURL)
		if err != nil {
			err = fmt.Errorf("COUNTERSIGN_DATABASE_URL (%s): %w", databaseURLForm, err)
		}
		return db, "PostgreSQL", err
	}
	if cfg.dataDirErr != nil {
		return nil, "", cfg.dataDirErr
	}
	if err := makeDataDir(cfg.DataDir); err != nil {
		return nil, "", err
	}
	path := filepath.Join(cfg.DataDir, storeFile)
	s, err := embedded.Open(ctx, path)
	return s, path, err
}

// makeDataDir creates the data directory, readable by its owner only: it
// holds the ledger and the local agent token.
func makeDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	return nil
}
