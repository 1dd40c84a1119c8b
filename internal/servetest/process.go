package servetest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// StartTimeout is how long Start waits for serve to listen.
const StartTimeout = 60 * time.Second

// defaults are the environment every process starts with; the caller's
// entries, later in the list, win.
var defaults = []string{"COUNTERSIGN_LISTEN=127.0.0.1:0", "COUNTERSIGN_LOG_FORMAT=json"}

// Process is a running `countersign serve`.
type Process struct {
	// Addr is the host:port it listens on; URL is "http://" + Addr.
	Addr string
	URL  string

	cmd    *exec.Cmd
	logs   *logBuffer
	exited chan struct{}
}

// Start runs `countersign serve` (Binary) with the test process's
// environment and env added (COUNTERSIGN_LISTEN defaults to a free
// loopback port, and the logs are JSON), and returns once it listens. The
// test's end kills it; a failed test logs its output.
func Start(t testing.TB, env ...string) *Process {
	t.Helper()
	return StartCommand(t, exec.Command(Binary(t), "serve"), env...)
}

// StartCommand is Start for a command of the caller's (another binary,
// other arguments): its environment is set as Start sets serve's.
func StartCommand(t testing.TB, cmd *exec.Cmd, env ...string) *Process {
	t.Helper()
	p := &Process{cmd: cmd, logs: newLogBuffer(), exited: make(chan struct{})}
	cmd.Env = append(append(os.Environ(), defaults...), env...)
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("countersign serve's output:\n%s", p.Logs())
		}
	})
	var addr string
	listening := func(line []byte) bool {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(line, &l) == nil && l.Msg == "listening" && l.Addr != "" {
			addr = l.Addr
			return true
		}
		return false
	}
	if !p.logs.waitLine(listening, p.exited, StartTimeout) {
		t.Fatalf("serve did not listen within %s:\n%s", StartTimeout, p.Logs())
	}
	p.Addr, p.URL = addr, "http://"+addr
	return p
}

// Logs returns what the process wrote so far, stdout and stderr.
func (p *Process) Logs() string { return p.logs.String() }

// WaitLog waits until a line the process wrote contains s, and reports
// whether one did before within passed or the process exited.
func (p *Process) WaitLog(s string, within time.Duration) bool {
	return p.WaitLogCount(s, 1, within)
}

// WaitLogCount waits until n lines the process wrote contain s, and
// reports whether they did before within passed or the process exited.
func (p *Process) WaitLogCount(s string, n int, within time.Duration) bool {
	count := 0
	return p.logs.waitLine(func(line []byte) bool {
		if bytes.Contains(line, []byte(s)) {
			count++
		}
		return count >= n
	}, p.exited, within)
}

// Signal sends sig to the process (SIGHUP: reload its configuration).
func (p *Process) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Kill sends SIGKILL, as a crash would: no deferred function, no shutdown
// hook runs. It waits for the process to be gone.
func (p *Process) Kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and waits at most within for the process to exit,
// then kills it. It returns the exit code, and whether it exited by itself.
func (p *Process) Stop(within time.Duration) (code int, exited bool) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(within):
		p.Kill()
		return p.cmd.ProcessState.ExitCode(), false
	}
}

// Exited is closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }
