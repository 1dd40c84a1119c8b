// Command floorhook is the ceiling any agent hook reaches on a machine under
// intakebench's load: it checks the bearer token, reads the body and answers
// 201 the first time it sees a body and 200 with Idempotent-Replayed after,
// remembering bodies in memory and touching no database. Driven as a peer
// (`intakebench -peer bin/floorhook -peer-name floor`), it shows how much of
// a hook's rate the HTTP exchange and the load driver already take.
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string) error {
	flags := flag.NewFlagSet("floorhook", flag.ContinueOnError)
	_ = flags.String("database-url", "", "ignored: the floor stores nothing")
	listen := flags.String("listen", "127.0.0.1:28091", "address to serve on")
	token := flags.String("token", "bench-agent-token", "the bearer token agents send")
	if err := flags.Parse(args); err != nil {
		return err
	}
	srv := &http.Server{Addr: *listen, Handler: handler(*token), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func handler(token string) http.Handler {
	var (
		mu   sync.Mutex
		seen = map[[32]byte]bool{}
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("POST /v1/requests", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"error":{"code":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, `{"error":{"code":"too_large"}}`, http.StatusRequestEntityTooLarge)
			return
		}
		sum := sha256.Sum256(body)
		mu.Lock()
		replay := seen[sum]
		seen[sum] = true
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if replay {
			w.Header().Set("Idempotent-Replayed", "true")
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
		fmt.Fprintf(w, `{"key":"floor_%x"}`+"\n", sum[:8])
	})
	return mux
}
