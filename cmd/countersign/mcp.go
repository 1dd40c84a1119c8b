package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/mcpserver"
)

const mcpUsage = `usage: countersign mcp [--call-timeout DURATION]

Serves countersign's agent API as MCP tools over stdio (JSON-RPC, one
message a line, on stdin and stdout), for an agent runtime to spawn. It is
a client of the countersign server at COUNTERSIGN_URL, as the agent whose
bearer token is COUNTERSIGN_TOKEN, and never opens a database. Its tools
are the agent's as GET /v1/tools lists them when it starts (it exits when
countersign does not answer that within --call-timeout). Logs go to
stderr.

  --call-timeout DURATION   how long one call to countersign may take,
                            retries included, before the tool answers
                            "unreachable" (default 30s)
`

// mcpOptions are countersign mcp's flags.
type mcpOptions struct {
	callTimeout time.Duration
}

func parseMCPArgs(args []string, stdout, stderr io.Writer) (mcpOptions, int, bool) {
	var opts mcpOptions
	_, code, ok := parseArgs("mcp", mcpUsage, args, 0, func(fs *flag.FlagSet) {
		fs.DurationVar(&opts.callTimeout, "call-timeout", 30*time.Second, "")
	}, stdout, stderr)
	if ok && opts.callTimeout <= 0 {
		io.WriteString(stderr, "countersign mcp: --call-timeout must be positive\n\n"+mcpUsage)
		return opts, 2, false
	}
	return opts, code, ok
}

// gatewayFollowEvery is how often countersign mcp lists the gateway's
// upstream tools again, so its client hears of a tool that came or went.
const gatewayFollowEvery = 10 * time.Second

// serveMCP runs the MCP server on stdin and stdout until the runtime
// closes stdin or ctx ends.
func serveMCP(ctx context.Context, opts mcpOptions, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	url, token := getenv("COUNTERSIGN_URL"), getenv("COUNTERSIGN_TOKEN")
	if url == "" || token == "" {
		return errors.New("set COUNTERSIGN_URL (the countersign server, such as http://127.0.0.1:8080) and COUNTERSIGN_TOKEN (the agent's bearer token)")
	}
	logger := newLogger(getenv("COUNTERSIGN_LOG_FORMAT"), stderr).With("component", "mcp")
	server, err := mcpserver.New(ctx, mcpserver.Config{
		Client: client.New(url, token), CallTimeout: opts.callTimeout, Version: versionString(), Logger: logger,
		FollowGateway: gatewayFollowEvery,
	})
	if err != nil {
		return err
	}
	logger.Info("serving MCP on stdio", "countersign", url)
	err = server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if ctx.Err() != nil {
		return nil // a signal ends the session as closing stdin does
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
