// Command fakeprovider serves the sandbox provider for demos
// and benchmarks: writes on any path are stored under their Idempotency-Key,
// GET /objects/K and GET /objects?key=K are verify URLs, GET /precondition
// the precondition.
//
//	fakeprovider -listen 127.0.0.1:9090 -secret "$COUNTERSIGN_DISPATCH_SECRET"
//	fakeprovider -ignore-keys -status 503 -times 2   # fail twice per key, then work
//	fakeprovider -noop                                # the benchmark's provider
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/countersign/countersign/sandbox"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9090", "address to serve on")
	secret := flag.String("secret", os.Getenv("COUNTERSIGN_DISPATCH_SECRET"), "dispatch secret; when set, bad signatures are counted and logged")
	noop := flag.Bool("noop", false, "answer every request 200 and remember nothing")
	ignoreKeys := flag.Bool("ignore-keys", false, "create a new object on every write, as a provider that ignores Idempotency-Key")
	status := flag.Int("status", 0, "refuse writes with this HTTP status")
	code := flag.String("code", "", `refuse writes with {"error":{"code": CODE}}`)
	retryAfter := flag.String("retry-after", "", "Retry-After header on refusals")
	hang := flag.Bool("hang", false, "hold every write without processing it")
	hangAfter := flag.Bool("hang-after-process", false, "store every write, then hold the answer")
	drop := flag.Bool("drop-after-process", false, "store every write, then drop the connection")
	delay := flag.Duration("delay", 0, "store every write, then answer this much later")
	times := flag.Int("times", 0, "apply the failure knobs to the first N writes of each key only")
	precondition := flag.Int("precondition", http.StatusOK, "status of GET /precondition")
	flag.Parse()

	var handler http.Handler = sandbox.Noop()
	var count *sandbox.Provider // what it received, told when it stops
	if !*noop {
		p := sandbox.New()
		count = p
		if *secret != "" {
			p.Secret = []byte(*secret)
		}
		p.IgnoreKeys(*ignoreKeys)
		p.SetPrecondition(*precondition)
		p.Set(sandbox.Behavior{Status: *status, Code: *code, RetryAfter: *retryAfter, Hang: *hang,
			HangAfterProcess: *hangAfter, DropAfterProcess: *drop, Delay: *delay, Times: *times})
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			before := p.BadSignatures()
			p.ServeHTTP(w, r)
			if p.BadSignatures() > before {
				log.Printf("write for key %q carried a bad signature", r.Header.Get("Idempotency-Key"))
			}
		})
		go func() {
			for range time.Tick(10 * time.Second) {
				log.Printf("%d writes received, %d objects held, %d bad signatures", p.Received(), p.Objects(), p.BadSignatures())
			}
		}()
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	// Notify before announcing the address: a signal that arrives between
	// the announcement and a goroutine's first run would otherwise kill the
	// process with the writes it already holds.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-sig
		// Answer the writes in flight before exiting, as a real provider
		// being restarted does. Closing their connections would make each
		// an outcome the caller cannot know: countersign records it unknown
		// and, for a tool it can neither verify nor resend, hands it to a
		// human. A second signal, or shutdownTimeout, closes them.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		go func() {
			select {
			case <-sig:
				cancel()
			case <-ctx.Done():
			}
		}()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
	}()
	log.Printf("fake provider on http://%s", ln.Addr())
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		log.Fatal(err)
	}
	<-stopped
	if count != nil {
		log.Printf("stopped: %d writes received, %d objects held, %d bad signatures", count.Received(), count.Objects(), count.BadSignatures())
	}
}

// shutdownTimeout bounds how long a signalled provider waits for the writes
// it holds (-delay, -hang) before closing their connections.
const shutdownTimeout = 30 * time.Second
