// Package benchserve is what the benchmark programs share: scratch
// databases, a real `countersign serve` built and started on one of them,
// and the figures read from the process (CPU time, resident memory) and
// from latency samples.
package benchserve

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultAdminURL is the PostgreSQL server the programs create their
// scratch databases on unless told another (-database-url).
const DefaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Token is the bearer token of the agent "bench" that StartServe configures.
const Token = "bench-agent-token"

// Tool is the one tool StartServe configures; its dispatch URL answers
// nothing, so an approved write stays unsent.
const Tool = "billing.credit"

// Server is a process under load.
type Server struct {
	Name     string
	Addr     string
	PID      int
	Database string // its scratch database, whose backends and commits are counted
}

// ScratchDatabase creates an empty database, named prefix and a random
// suffix, on the server of adminURL and returns its URL and a function that
// drops it.
func ScratchDatabase(ctx context.Context, adminURL, prefix string) (string, func(), error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("parsing -database-url: %w", err)
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("connecting to the PostgreSQL server: %w", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := prefix + "_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("creating a scratch database: %w", err)
	}
	u.Path = "/" + name
	return u.String(), func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		conn.Close(context.Background())
	}, nil
}

// DatabaseName is the database a connection URL names.
func DatabaseName(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// Build builds countersign into dir; the package path works from anywhere
// inside the module, a smoke test's directory included.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "countersign")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/countersign/countersign/cmd/countersign")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building countersign: %w\n%s", err, out)
	}
	return bin, nil
}

// StartServe starts bin serve on dbURL with one agent (bench, Token) and
// one tool (Tool), its configuration written into dir, and waits until it
// is ready. extraEnv is added to its environment.
func StartServe(ctx context.Context, bin, dir, dbURL string, extraEnv []string) (Server, func(), error) {
	sum := sha256.Sum256([]byte(Token))
	cfg := fmt.Sprintf(`agents: [{name: bench, token_sha256: %s}]
tools:
  %s:
    approvers: [U0BENCH]
    dispatch: {url: "http://127.0.0.1:9/unused"}
`, hex.EncodeToString(sum[:]), Tool)
	cfgPath := filepath.Join(dir, "countersign.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return Server{}, nil, err
	}
	addr, err := FreeAddr()
	if err != nil {
		return Server{}, nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"COUNTERSIGN_DATABASE_URL="+dbURL,
		"COUNTERSIGN_CONFIG="+cfgPath,
		"COUNTERSIGN_DISPATCH_SECRET=bench",
		"COUNTERSIGN_LISTEN="+addr,
	)
	cmd.Env = append(cmd.Env, extraEnv...)
	s, stop, err := Start(ctx, "countersign", cmd, addr)
	s.Database = DatabaseName(dbURL)
	return s, stop, err
}

// Start starts cmd and waits until it answers GET /readyz on addr with 200.
func Start(ctx context.Context, name string, cmd *exec.Cmd, addr string) (Server, func(), error) {
	out := &headWriter{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return Server{}, nil, fmt.Errorf("starting %s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	hc := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := hc.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return Server{Name: name, Addr: addr, PID: cmd.Process.Pid}, stop, nil
			}
		}
		select {
		case <-exited:
			return Server{}, nil, fmt.Errorf("%s exited before it was ready:\n%s", name, out)
		case <-ctx.Done():
			stop()
			return Server{}, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return Server{}, nil, fmt.Errorf("%s was not ready within 30s:\n%s", name, out)
		}
	}
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// headWriter keeps the first max bytes written to it: a server's start-up
// messages, for the error when it does not become ready.
type headWriter struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (w *headWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Pct returns the p-th quantile of l, rounded for a table.
func Pct(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))].Round(10 * time.Microsecond)
}

// CPUTime reads the user and system CPU time a process has used so far
// (/proc/PID/stat, fields 14 and 15, in clock ticks of 1/100 s on Linux).
func CPUTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, field 2, may hold spaces; count from after it.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// Memory reads a line of /proc/PID/status in bytes: "VmRSS" for the
// resident set now, "VmHWM" for its high-water mark; 0 when unreadable.
func Memory(pid int, field string) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// PeakRSS formats a process's high-water resident set size.
func PeakRSS(pid int) string {
	b := Memory(pid, "VmHWM")
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
