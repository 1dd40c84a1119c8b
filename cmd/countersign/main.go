// Command countersign is a write gate for AI agents: agents post the writes
// they intend to make, humans countersign them in Slack, and countersign
// performs exactly the approved write, once.
//
//	countersign serve     run the hook, the Slack surface and the executor
//	countersign init      [DIR]: write a working configuration for tools of one's own, and say how to run it
//	countersign dev-provider  a local provider for trying tools out: checks signatures and receipts, keeps every write
//	countersign migrate   apply database migrations and exit (--app-role NAME: prepare serve's role)
//	countersign key       read an intent JSON from a file or stdin and print its key
//	countersign backup    write a consistent copy of the embedded store to a file
//	countersign restore   put a backup back, or mark a restored PostgreSQL database
//	countersign config    check FILE: validate a configuration and print it, secrets redacted
//	countersign policy    test FILE CASES, explain FILE INTENT: the verdicts a configuration's policies give
//	countersign approve   REF: approve a request as a local reviewer, through the serve on this machine
//	countersign reject    REF [--reason TEXT]: reject a request as a local reviewer
//	countersign edit      REF --effect JSON: approve a request with its effect changed, as a local reviewer
//	countersign mcp       serve the agent API as MCP tools on stdio (COUNTERSIGN_URL, COUNTERSIGN_TOKEN)
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

	"github.com/countersign/countersign/store"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `usage: countersign <command>

commands:
  serve     run the agent hook, the Slack surface and the executor
  init      [DIR]: write a working configuration (an agent, an HTTP tool
            and an agent-executed tool) and say how to run it
  dev-provider
            a local provider for trying tools out: checks signatures and
            receipts, keeps every write it got (GET /writes)
  migrate   apply database migrations and exit (--app-role NAME: prepare
            the least-privilege role serve runs as; see migrate --help)
  key       read an intent JSON from FILE or stdin and print its key
  audit     verify: check the hash chains of the audit trail (--anchor FILE:
            and hold them to an anchor); anchor: write that anchor
  backup    write a consistent copy of the embedded store to FILE, online
  restore   put a backup back (serve stopped), or mark a restored
            PostgreSQL database (--postgres), so nothing is sent twice
  config    check FILE: validate a configuration file and print the
            effective configuration, secrets redacted
  policy    test FILE CASES: check a configuration's verdicts against
            expected ones; explain FILE INTENT: the verdict and why
  approve   REF: approve a request as a local: reviewer, through the serve
            running on this machine's data directory (see approve --help)
  reject    REF [--reason TEXT]: reject a request the same way
  edit      REF --effect JSON: approve a request with its effect changed,
            the same way (see edit --help)
  mcp       serve the agent API as MCP tools on stdio, as a client of
            COUNTERSIGN_URL with COUNTERSIGN_TOKEN (see mcp --help)
  version   print the version

Every command takes --help. Configuration comes from the environment
(COUNTERSIGN_DATABASE_URL, COUNTERSIGN_CONFIG, ...); see README.md.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

const serveUsage = `usage: countersign serve

Runs the agent hook, the Slack surface, the review inbox and the executor
until SIGINT or SIGTERM. It takes no flags: configuration comes from the
environment (COUNTERSIGN_DATABASE_URL, COUNTERSIGN_CONFIG,
COUNTERSIGN_LISTEN, ...; see README.md). Without COUNTERSIGN_CONFIG it runs
locally: embedded store, demo tool, sandbox provider and review inbox.
`

const keyUsage = `usage: countersign key [FILE]

Reads an intent as an agent would post it, from FILE or else from stdin, and
prints the key countersign stores for it: its idempotency_key if it has one,
else the derived key. Nothing is stored or sent.
`

const versionUsage = `usage: countersign version

Prints the version.
`

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		if _, code, ok := parseArgs("serve", serveUsage, args[1:], 0, nil, stdout, stderr); !ok {
			return code
		}
		err = serve(ctx, getenv, stderr)
	case "init":
		opts, code, ok := parseInitArgs(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = initDir(opts, stdout)
	case "dev-provider":
		opts, code, ok := parseDevProviderArgs(args[1:], getenv, stdout, stderr)
		if !ok {
			return code
		}
		err = devProvider(ctx, opts, stderr)
	case "migrate":
		opts, code, ok := parseMigrateArgs(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = migrate(ctx, opts, getenv, stdout)
	case "key":
		files, code, ok := parseArgs("key", keyUsage, args[1:], 1, nil, stdout, stderr)
		if !ok {
			return code
		}
		err = printKey(files, stdin, stdout)
	case "audit":
		var code int
		if code, err = auditCommand(ctx, args[1:], getenv, stdout, stderr); code != 0 {
			return code
		}
	case "config":
		return configCheck(args[1:], getenv, stdout, stderr)
	case "policy":
		return policyCommand(args[1:], getenv, stdout, stderr)
	case "backup":
		files, code, ok := parseArgs("backup", backupUsage, args[1:], 1, nil, stdout, stderr)
		if !ok {
			return code
		}
		if len(files) != 1 {
			fmt.Fprintf(stderr, "countersign backup: name the file to write\n\n%s", backupUsage)
			return 2
		}
		err = backup(ctx, files[0], getenv, stdout)
	case "restore":
		opts, code, ok := parseRestoreArgs(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = restore(ctx, opts, getenv, stdout)
	case "approve", "reject":
		opts, code, ok := parseLocalReviewArgs(store.Verdict(args[0]), args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = localReview(ctx, opts, getenv, stdout)
	case "edit":
		opts, code, ok := parseEditArgs(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = localReview(ctx, opts, getenv, stdout)
	case "mcp":
		opts, code, ok := parseMCPArgs(args[1:], stdout, stderr)
		if !ok {
			return code
		}
		err = serveMCP(ctx, opts, getenv, stdin, stdout, stderr)
	case "version", "--version", "-version":
		if _, code, ok := parseArgs("version", versionUsage, args[1:], 0, nil, stdout, stderr); !ok {
			return code
		}
		fmt.Fprintln(stdout, "countersign", versionString())
	case "help", "-h", "-help", "--help":
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

// versionString is the version stamped at build time (-ldflags "-X
// main.version=…"), printed exactly as stamped: a release says what it is,
// whatever checkout built it. An unstamped build says the module version
// from the build info (set by `go install module@version`) or "dev", with
// the VCS revision when the build recorded one.
func versionString() string {
	if version != "dev" {
		return version
	}
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if len(revision) >= 12 {
		v += " (" + revision[:12]
		if modified == "true" {
			v += ", modified"
		}
		v += ")"
	}
	return v
}
