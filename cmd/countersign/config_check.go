package main

import (
	"fmt"
	"io"

	"github.com/countersign/countersign/config"
)

const configUsage = `usage: countersign config check FILE

Validates the configuration file FILE as serve would load it, with this
environment (its ${VAR} references, COUNTERSIGN_* and SLACK_* settings), and
prints the effective configuration: the file with every default filled in
as serve applies it, secrets redacted (secret fields and headers, and in
URLs the userinfo's password, or the userinfo itself when it has none, and
every query parameter's value). Exits 0 when serve would start with it, 1 with every
problem listed (each with its line) when it would not. Nothing is started
or connected to.
`

// configCheck validates file and prints the effective configuration.
func configCheck(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	rest, code, ok := parseArgs("config", configUsage, args, 2, nil, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 2 || rest[0] != "check" {
		fmt.Fprint(stderr, configUsage)
		return 2
	}
	file := rest[1]
	env := func(name string) string {
		if name == "COUNTERSIGN_CONFIG" {
			return file
		}
		return getenv(name)
	}
	cfg, err := config.Load(env)
	if err != nil {
		fmt.Fprintf(stderr, "countersign config check: %v\n", err)
		return 1
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "countersign config check: %s has problems:\n%v\n", file, err)
		return 1
	}
	out, err := cfg.EffectiveYAML()
	if err != nil {
		fmt.Fprintf(stderr, "countersign config check: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "# %s is valid. The effective configuration, defaults filled in, secrets redacted.\n", file)
	fmt.Fprintf(stdout, "# environment: %s\n", cfg.DescribeEnvironment())
	_, _ = stdout.Write(out)
	return 0
}
