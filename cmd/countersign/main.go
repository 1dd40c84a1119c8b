// Command countersign is a write gate for AI agents: agents post the writes
// they intend to make, humans countersign them in Slack, and countersign
// performs exactly the approved write, once.
//
//	countersign serve     run the hook, the Slack surface and the executor
//	countersign migrate   apply database migrations and exit (--app-role NAME: prepare serve's role)
//	countersign key       read an intent JSON on stdin and print its key
//	countersign version   print the version
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `usage: countersign <command>

commands:
  serve     run the agent hook, the Slack surface and the executor
  migrate   apply database migrations and exit (--app-role NAME: prepare
            the least-privilege role serve runs as; see migrate --help)
  key       read an intent JSON on stdin and print its key
  version   print the version

configuration comes from the environment (COUNTERSIGN_DATABASE_URL,
COUNTERSIGN_CONFIG, ...); see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(ctx, getenv, stderr)
	case "migrate":
		opts, code, ok := parseMigrateArgs(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = migrate(ctx, opts, getenv, stdout)
	case "key":
		err = printKey(stdin, stdout)
	case "version":
		fmt.Fprintln(stdout, "countersign", versionString())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "countersign: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "countersign %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func versionString() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " (" + s.Value[:12] + ")"
			}
		}
	}
	return v
}
