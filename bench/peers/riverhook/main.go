// Command riverhook is the agent hook a Go team would build instead of
// countersign's: an HTTP handler that checks a bearer token, decodes the
// intent strictly, derives a key from it and inserts a unique River job,
// answering 201 for a new intent and 200 with Idempotent-Replayed: true for a
// repeat. It speaks countersign's request shape (POST /v1/requests, GET
// /readyz), so one load driver measures both side by side (intakebench -peer
// does).
//
//	go run ./riverhook -database-url postgres://postgres@127.0.0.1:5432/riverpeer -listen 127.0.0.1:28090 -token bench-agent-token
//
// The database should be a scratch one: River's tables are created and
// truncated.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// ApprovalArgs is the pending write, unique by its key.
type ApprovalArgs struct {
	Key     string          `json:"key" river:"unique"`
	RunID   string          `json:"run_id"`
	Tool    string          `json:"tool"`
	Effect  json.RawMessage `json:"effect"`
	Summary string          `json:"summary,omitempty"`
}

// Kind is River's name for the job type.
func (ApprovalArgs) Kind() string { return "approval" }

type intent struct {
	RunID   string          `json:"run_id"`
	Step    json.RawMessage `json:"step"`
	Tool    string          `json:"tool"`
	Effect  json.RawMessage `json:"effect"`
	Summary string          `json:"summary"`
	Reason  string          `json:"reason"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("riverhook", flag.ContinueOnError)
	dbURL := flags.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL (a scratch database: River's tables are created and truncated)")
	listen := flags.String("listen", "127.0.0.1:18090", "address to serve POST /v1/requests on")
	token := flags.String("token", "bench-agent-token", "the agent's bearer token")
	if err := flags.Parse(args); err != nil {
		return err
	}

	cfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		return err
	}
	// One connection per client of the largest run (32) and River's own;
	// with 64 the peer and two countersign servers could together pass
	// PostgreSQL's default limit of 100 connections.
	cfg.MaxConns = 40
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	handler, err := newHandler(ctx, pool, *token)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Minute}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Fprintf(stdout, "river hook listening on %s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler migrates River's tables in the pool's database, empties the job
// table and returns the hook: POST /v1/requests and GET /readyz.
func newHandler(ctx context.Context, pool *pgxpool.Pool, token string) (http.Handler, error) {
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrating River's tables: %w", err)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return nil, err
	}
	// An insert-only client: no queues, so it never works the jobs.
	client, err := river.NewClient(driver, &river.Config{
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return nil, err
	}
	want := sha256.Sum256([]byte(token))

	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("POST /v1/requests", func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, `{"error":"too_large"}`, http.StatusRequestEntityTooLarge)
			return
		}
		var in intent
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil || in.RunID == "" || in.Tool == "" || len(in.Effect) == 0 {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusUnprocessableEntity)
			return
		}
		// The key: sha256 of the basis re-encoded by encoding/json (map keys sorted).
		var effect any
		if err := json.Unmarshal(in.Effect, &effect); err != nil {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusUnprocessableEntity)
			return
		}
		basis, _ := json.Marshal(map[string]any{"run": in.RunID, "step": in.Step, "tool": in.Tool, "effect": effect})
		sum := sha256.Sum256(basis)
		key := "wa_" + hex.EncodeToString(sum[:])
		canonical, _ := json.Marshal(effect)
		res, err := client.Insert(r.Context(), ApprovalArgs{Key: key, RunID: in.RunID, Tool: in.Tool, Effect: canonical, Summary: in.Summary},
			&river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return
			}
			http.Error(w, `{"error":"internal"}`, http.StatusInternalServerError)
			return
		}
		status := http.StatusCreated
		if res.UniqueSkippedAsDuplicate {
			status = http.StatusOK
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"id": res.Job.ID, "key": key, "status": "pending"})
	})
	return mux, nil
}
