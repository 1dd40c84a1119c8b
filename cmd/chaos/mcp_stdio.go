package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// waitMCPStdio runs `countersign mcp` as an agent's runtime does, talking
// to the fleet through the front (one COUNTERSIGN_URL for the session's
// whole life), and calls wait_for_outcome over its stdin and stdout until
// the answer is settled. One process serves the whole wait: replicas die
// under it, not the MCP server.
func (r *run) waitMCPStdio(ctx context.Context, w *waiter) (string, error) {
	cmd := exec.CommandContext(ctx, r.binary, "mcp", "--call-timeout", "10s")
	cmd.Env = append(os.Environ(), "COUNTERSIGN_URL="+r.front.url(), "COUNTERSIGN_TOKEN="+agentToken)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	s := &stdioSession{in: stdin, out: bufio.NewReader(stdout)}

	if _, err := s.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"chaos","version":"1"}}`); err != nil {
		return "", fmt.Errorf("initialize: %w; its log: %s", err, stderr.tail())
	}
	if err := s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", err
	}
	args := fmt.Sprintf(`{"name":"wait_for_outcome","arguments":{"ref":%q,"timeout_seconds":20}}`, w.in.Key)
	for ctx.Err() == nil {
		line, err := s.call("tools/call", args)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return "", fmt.Errorf("%w; its log: %s", err, stderr.tail())
		}
		res, err := mcpResult(line)
		if err != nil {
			return "", err
		}
		switch {
		case res.IsError && res.Structured.Code == "pruned":
			return r.prunedFinal(ctx, w.in.Key)
		case res.IsError:
			w.retries++ // countersign out of reach past the call timeout: call again
		case res.Structured.Settled:
			return res.Structured.final(), nil
		}
	}
	return "", fmt.Errorf("still waiting when the run ended")
}

// stdioSession is a JSON-RPC session over newline-delimited messages.
type stdioSession struct {
	in  io.Writer
	out *bufio.Reader
	id  int
}

func (s *stdioSession) send(msg string) error {
	_, err := io.WriteString(s.in, msg+"\n")
	return err
}

// call sends a request and returns its answer, passing over notifications
// (progress) sent before it.
func (s *stdioSession) call(method, params string) ([]byte, error) {
	s.id++
	if err := s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.id, method, params)); err != nil {
		return nil, err
	}
	for {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("the MCP server closed its output: %w", err)
		}
		var msg struct {
			ID     *int   `json:"id"`
			Method string `json:"method"` // a request or notification of the server's
		}
		if json.Unmarshal(line, &msg) == nil && msg.Method == "" && msg.ID != nil && *msg.ID == s.id {
			return line, nil
		}
	}
}

// lockedBuffer keeps a process's stderr for an error message.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<16 {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *lockedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	return s[max(0, len(s)-2000):]
}
