// Command agent is a runnable example of an agent using countersign's Go
// client: it lists the tools it may request, asks for one write, and waits
// for the human decision and the outcome.
//
//	go run ./cmd/countersign serve                # prints a token and the inbox link
//	go run ./examples/agent                       # in another terminal
//
// Against the local run it needs nothing more: the URL defaults to
// http://127.0.0.1:8080 and the token to the one the local run keeps in its
// data directory. Against any other server set COUNTERSIGN_URL and
// COUNTERSIGN_TOKEN (the agent's bearer token).
//
// With no flags it asks for the local run's demo tool, demo.refund; approve
// the card in the inbox and it prints the outcome. Run it twice: the second
// run is the same intent, so it lands on the same key and writes nothing new.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/countersign/countersign/client"
)

func main() {
	tool := flag.String("tool", "demo.refund", "the tool to request")
	run := flag.String("run", "example-run-1", "the agent run this write belongs to")
	wait := flag.Duration("wait", 10*time.Minute, "how long to wait for the decision and the outcome")
	flag.Parse()
	if err := agent(*tool, *run, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func agent(tool, run string, wait time.Duration) error {
	base, token := os.Getenv("COUNTERSIGN_URL"), os.Getenv("COUNTERSIGN_TOKEN")
	if base == "" {
		base = "http://127.0.0.1:8080" // the local run's address
	}
	if token == "" {
		token = localToken()
	}
	if token == "" {
		return errors.New("no token: set COUNTERSIGN_TOKEN to the agent's bearer token (the local run prints its own as \"agent token\"), and COUNTERSIGN_URL unless it is http://127.0.0.1:8080")
	}
	c := client.New(base, token)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	tools, err := c.Tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		fmt.Printf("may request %s (reversible: %v, %d approval(s) from %v) %s\n", t.Name, t.Reversible, t.Policy.Approvals, t.Policy.Approvers, t.Description)
	}

	intent := client.Intent{
		RunID: run, Step: 1, Tool: tool,
		Effect:  map[string]any{"order": "ord_1001", "amount_cents": 1250, "currency": "EUR"},
		Summary: "Refund 12.50 EUR on ord_1001",
		Reason:  "parcel lost in transit",
	}
	key, err := client.Key(intent)
	if err != nil {
		return err
	}
	fmt.Println("asking under", key, "- approve it in the review inbox or in Slack")

	req, err := c.Do(ctx, intent)
	var refusal *client.APIError
	switch {
	case errors.Is(err, client.ErrInvalidEffect) && errors.As(err, &refusal):
		return fmt.Errorf("the effect does not fit the tool (%s): %s", refusal.Field, refusal.Message)
	case errors.Is(err, client.ErrDeniedByPolicy) && errors.As(err, &refusal):
		return fmt.Errorf("the tool's policy refuses this write (rule %s), on every retry: %s", refusal.Tier, refusal.Message)
	case errors.Is(err, client.ErrKeyReused):
		return errors.New("this run and step already asked for a different write")
	case err != nil:
		return err
	case req.Succeeded():
		fmt.Printf("done once: %s, provider ref %q\n", req.KeyShort, req.Execution.ProviderRef)
	case req.Execution != nil:
		fmt.Printf("the write %s (%s)\n", req.Execution.State, req.Execution.Code)
	default:
		fmt.Printf("not done: the request was %s\n", req.Status)
	}
	return nil
}

// localToken is the local run's agent token, which serve keeps in its data
// directory (COUNTERSIGN_DATA_DIR, else the per-user data directory serve
// picks: $XDG_DATA_HOME/countersign or ~/.local/share/countersign on Linux),
// or "" when there is none.
func localToken() string {
	dir := os.Getenv("COUNTERSIGN_DATA_DIR")
	if dir == "" && runtime.GOOS != "linux" && runtime.GOOS != "freebsd" && runtime.GOOS != "openbsd" {
		base, err := os.UserConfigDir() // where serve keeps it on macOS and Windows
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "countersign")
	}
	if dir == "" {
		base := os.Getenv("XDG_DATA_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return ""
			}
			base = filepath.Join(home, ".local", "share")
		}
		dir = filepath.Join(base, "countersign")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "local-agent-token"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(raw))
}
