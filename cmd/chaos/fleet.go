package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildCountersign builds this tree's countersign into dir.
func buildCountersign(dir string) (string, error) {
	path := filepath.Join(dir, "countersign")
	out, err := exec.Command("go", "build", "-o", path, "github.com/countersign/countersign/cmd/countersign").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return path, nil
}

// replica is one `countersign serve` slot of the fleet: killed and started
// again many times, each time on a new loopback port.
type replica struct {
	name   string
	binary string
	env    []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	base  string // http://127.0.0.1:port while it serves; "" while it is down
	lines []string
	// refusals are the log lines of clicks refused for a reason of the
	// server's own (the database), the first few.
	refusals []string
}

var listening = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)

// start runs serve and waits until it listens.
func (r *replica) start(ctx context.Context) error {
	cmd := exec.Command(r.binary, "serve")
	cmd.Env = append(os.Environ(), r.env...)
	out, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			// The last lines only: enough to explain a failure.
			if r.lines = append(r.lines, line); len(r.lines) > 200 {
				r.lines = r.lines[len(r.lines)-200:]
			}
			if strings.Contains(line, `"msg":"recording a decision`) && len(r.refusals) < 3 {
				r.refusals = append(r.refusals, line)
			}
			r.mu.Unlock()
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		r.mu.Lock()
		r.cmd, r.base = cmd, "http://"+a
		r.mu.Unlock()
		return nil
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return fmt.Errorf("%s did not start listening:\n%s", r.name, r.tail())
}

// kill sends SIGKILL: nothing in the process gets to clean up.
func (r *replica) kill() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd, r.base = nil, ""
	r.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
	}
}

// stop ends the process with SIGTERM, as at the end of the run.
func (r *replica) stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd, r.base = nil, ""
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (r *replica) url() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.base
}

func (r *replica) refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refusals...)
}

func (r *replica) tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s string
	for _, l := range r.lines[max(0, len(r.lines)-30):] {
		s += l + "\n"
	}
	return s
}

// fleet is the replicas on one database.
type fleet struct{ replicas []*replica }

// pick returns the base URL of a random replica that is serving, or "" when
// none is.
func (f *fleet) pick() string {
	var up []string
	for _, r := range f.replicas {
		if u := r.url(); u != "" {
			up = append(up, u)
		}
	}
	if len(up) == 0 {
		return ""
	}
	return up[rand.IntN(len(up))]
}

// pickTwo returns two serving replicas' URLs, different when two serve.
func (f *fleet) pickTwo() (string, string) {
	a := f.pick()
	for range 5 {
		if b := f.pick(); b != a {
			return a, b
		}
	}
	return a, a
}
