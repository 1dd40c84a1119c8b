package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/config"
)

// countersign init: from the demo to one's own tools in one step. It writes
// a configuration that serve runs as it is, and the environment it runs
// with, into a directory of the user's.
const (
	initConfigFile = "countersign.yml"
	// initEnvFile holds the environment of serve, dev-provider, approve,
	// reject and mcp for the directory, the dispatch secret among it: the
	// file deploy/systemd reads as EnvironmentFile, named the same.
	initEnvFile = "countersign.env"
	// initDataDir is the directory's own data directory: its embedded
	// store, its receipt key and its local review socket, apart from the
	// demo's.
	initDataDir = ".countersign"
	// initAgent, initHTTPTool and initAgentTool are what the file names.
	initAgent     = "my-agent"
	initHTTPTool  = "tickets.create"
	initAgentTool = "payments.refund"
	// The addresses serve and dev-provider listen on unless told others.
	initListen   = "127.0.0.1:8080"
	initProvider = "127.0.0.1:9090"
)

const initUsage = `usage: countersign init [--force] [--listen ADDR] [--provider ADDR] [DIR]

Writes a working configuration into DIR (default: the current directory),
for trying countersign with tools of your own:

  countersign.yml   one agent (the hash of its token), an HTTP tool
                    (tickets.create) that countersign sends to
                    countersign dev-provider once approved, and an
                    agent-executed tool (payments.refund) that the agent
                    performs itself with a receipt; both with an effect
                    schema, both approved by local:reviewer in the inbox
  countersign.env   the environment serve runs with: COUNTERSIGN_CONFIG,
                    the data directory DIR/.countersign, the listen
                    address, the inbox on, and a new dispatch secret
                    (readable by its owner only; keep it out of version
                    control)

The agent's token is printed once, on standard output, and written nowhere.
Then it prints how to run serve and the dev provider. It refuses to replace
either file unless --force is given.

  --listen ADDR     where serve will listen (default 127.0.0.1:8080)
  --provider ADDR   where countersign dev-provider will listen, which
                    tickets.create dispatches to (default 127.0.0.1:9090)
  --force           replace countersign.yml and countersign.env
`

// initOptions are init's arguments.
type initOptions struct {
	dir      string
	listen   string
	provider string
	force    bool
}

func parseInitArgs(args []string, stdout, stderr io.Writer) (opts initOptions, code int, ok bool) {
	opts = initOptions{dir: ".", listen: initListen, provider: initProvider}
	define := func(fs *flag.FlagSet) {
		fs.BoolVar(&opts.force, "force", opts.force, "")
		fs.StringVar(&opts.listen, "listen", opts.listen, "")
		fs.StringVar(&opts.provider, "provider", opts.provider, "")
	}
	// Flags may come after DIR too: parse what follows it again.
	rest, code, ok := parseArgs("init", initUsage, args, 1<<10, define, stdout, stderr)
	if !ok {
		return opts, code, false
	}
	if len(rest) > 0 {
		opts.dir = rest[0]
		if _, code, ok = parseArgs("init", initUsage, rest[1:], 0, define, stdout, stderr); !ok {
			return opts, code, false
		}
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", opts.listen}, {"--provider", opts.provider}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			fmt.Fprintf(stderr, "countersign init: %s %q is not host:port\n\n%s", a.flag, a.addr, initUsage)
			return opts, 2, false
		}
	}
	return opts, 0, true
}

// errInitExists is init's refusal to replace a file.
var errInitExists = errors.New("exists")

// initDir writes the configuration and the environment into opts.dir and
// tells the user, on stdout, the agent's token (once) and how to run them.
func initDir(opts initOptions, stdout io.Writer) error {
	dir, err := filepath.Abs(opts.dir)
	if err != nil {
		return err
	}
	configPath, envPath := filepath.Join(dir, initConfigFile), filepath.Join(dir, initEnvFile)
	if !opts.force {
		for _, p := range []string{configPath, envPath} {
			if _, err := os.Lstat(p); err == nil {
				return fmt.Errorf("%s %w; nothing was written (--force replaces it)", p, errInitExists)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	token := "cs_" + randomString(32)
	secret := randomString(32)
	sum := sha256.Sum256([]byte(token))
	base := "http://" + connectAddr(opts.listen)
	env := initEnv(configPath, filepath.Join(dir, initDataDir), opts.listen, base, secret)
	// The environment first, owner only: a failure after it leaves no
	// configuration that would run without its secret.
	if err := writeNew(envPath, []byte(env), 0o600, opts.force); err != nil {
		return err
	}
	if err := writeNew(configPath, []byte(initConfig(hex.EncodeToString(sum[:]), "http://"+connectAddr(opts.provider))), 0o644, opts.force); err != nil {
		return err
	}
	printInitDone(stdout, dir, token, base, opts.provider)
	return nil
}

// writeNew writes data to path with mode, refusing to replace a file
// unless force is set (then the file is replaced, its mode set anew).
func writeNew(path string, data []byte, mode os.FileMode, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %w; nothing more was written (--force replaces it)", path, errInitExists)
	}
	if err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// connectAddr is how this machine reaches a listen address: an empty or
// unspecified host is 127.0.0.1.
func connectAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// initEnv is countersign.env: one VAR=value a line, as a shell sources it
// (set -a; . ./countersign.env; set +a), as systemd's EnvironmentFile and
// docker's --env-file read it.
func initEnv(configPath, dataDir, listen, base, secret string) string {
	var b strings.Builder
	b.WriteString(`# Written by countersign init: the environment of countersign serve,
# dev-provider, approve, reject and mcp for this directory. It holds the
# dispatch secret: keep it to yourself and out of version control. Load it
# into a shell with:  set -a; . ./countersign.env; set +a
`)
	for _, kv := range [][2]string{
		{"COUNTERSIGN_CONFIG", configPath},
		{"COUNTERSIGN_DATA_DIR", dataDir},
		{"COUNTERSIGN_LISTEN", listen},
		{"COUNTERSIGN_INBOX", "on"},
		// countersign mcp and dev-provider find serve here.
		{"COUNTERSIGN_URL", base},
		// Signs every dispatch of tickets.create; dev-provider checks it.
		{"COUNTERSIGN_DISPATCH_SECRET", secret},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], shellValue(kv[1]))
	}
	return b.String()
}

// shellValue quotes v for a shell when it holds anything but the
// characters a path or a secret of init's has.
func shellValue(v string) string {
	safe := v != "" && strings.IndexFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-:+=,@", r))
	}) < 0
	if safe {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// initConfig is countersign.yml: the agent holding the token whose hash is
// tokenHash, and the two tools, tickets.create sent to provider.
func initConfig(tokenHash, provider string) string {
	return fmt.Sprintf(`# Written by countersign init. serve reads it with the environment of
# countersign.env (docs/GETTING_STARTED.md); check a change with
#   countersign config check countersign.yml
# and load it into a running serve with SIGHUP.

agents:
  - name: %[1]s
    # The SHA-256 of the token countersign init printed once; the token
    # itself is written nowhere. For another: printf %%s "$TOKEN" | sha256sum
    token_sha256: %[2]s

tools:
  # An HTTP tool: once a reviewer approves a request, countersign sends the
  # effect itself, once, signed with COUNTERSIGN_DISPATCH_SECRET, to the
  # provider below (countersign dev-provider, for trying it out; then your
  # service, which checks the signature: docs/EXECUTOR.md).
  %[3]s:
    description: Open a support ticket, through the local dev provider.
    approvers: [%[4]s]
    dispatch:
      method: POST
      url: %[5]s/tickets
      timeout: 10s
    # The provider honours Idempotency-Key: a repeat creates nothing new.
    key_aware: true
    effect_schema:
      type: object
      required: [title, body]
      additionalProperties: false
      properties:
        title: {type: string, minLength: 1, maxLength: 200, description: "the ticket's title"}
        body: {type: string, maxLength: 10000, description: "what the ticket says"}
        priority: {enum: [low, normal, high], description: "how urgent it is (default normal)"}
      examples:
        - {title: Printer on floor 3 is jammed, body: It shows error E42 since this morning., priority: normal}

  # An agent-executed tool: once approved, the agent performs the write
  # itself, with the request's key as Idempotency-Key and the receipt in
  # Countersign-Receipt, which its provider checks against
  # /.well-known/jwks.json; then it reports the outcome (docs/RECEIPTS.md).
  %[6]s:
    description: Refund an order, in cents; the agent sends the refund itself.
    approvers: [%[4]s]
    execute: agent
    outcome_timeout: 30m
    effect_schema:
      type: object
      required: [order, amount_cents, currency]
      additionalProperties: false
      properties:
        order: {type: string, minLength: 1, maxLength: 64, description: "the order to refund, e.g. ord_1001"}
        amount_cents: {type: integer, minimum: 1, description: "the amount to refund, in cents"}
        currency: {type: string, pattern: "^[A-Z]{3}$", description: "ISO 4217 code, e.g. EUR"}
      examples:
        - {order: ord_1001, amount_cents: 1250, currency: EUR}
`, initAgent, tokenHash, initHTTPTool, config.DefaultInboxReviewer, provider, initAgentTool)
}

// printInitDone tells the user the token, once, and how to run what init
// wrote.
func printInitDone(w io.Writer, dir, token, base, provider string) {
	fmt.Fprintf(w, `Wrote %[1]s/%[2]s and %[1]s/%[3]s (the environment, with a new dispatch secret: owner only).

The agent's token, shown this once (%[2]s keeps only its hash):

  export COUNTERSIGN_TOKEN=%[4]s

Run, from %[1]s, each in a terminal of its own:

  set -a; . ./%[3]s; set +a; countersign serve
  set -a; . ./%[3]s; set +a; countersign dev-provider --listen %[5]s

serve prints the review inbox's link; dev-provider receives %[6]s's writes
and lists them at http://%[7]s/writes. Then, as the agent:

  curl -s %[8]s/v1/requests -H "Authorization: Bearer $COUNTERSIGN_TOKEN" -H 'Content-Type: application/json' -d '{"run_id": "run-1", "step": 1, "tool": "%[6]s", "effect": {"title": "Printer on floor 3 is jammed", "body": "It shows error E42."}}'

Approve it in the inbox, or: countersign approve KEY. Over MCP, with the
same environment and token: countersign mcp. docs/GETTING_STARTED.md goes on.
`, dir, initConfigFile, initEnvFile, token, provider, initHTTPTool, connectAddr(provider), base)
}
