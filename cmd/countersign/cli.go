package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// parseArgs reads one command's flags and arguments with the standard
// library's flag package. define adds the command's flags; at most maxArgs
// arguments may follow them. When ok is false the command ends with code: 0
// after --help (the usage went to stdout and nothing else happens), 2 after a
// usage error (said on stderr, with the usage).
func parseArgs(name, usage string, args []string, maxArgs int, define func(fs *flag.FlagSet), stdout, stderr io.Writer) (rest []string, code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the errors and the usage are printed below
	fs.Usage = func() {}
	if define != nil {
		define(fs)
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return nil, 0, false
	case err != nil:
		fmt.Fprintf(stderr, "countersign %s: %v\n\n%s", name, err, usage)
		return nil, 2, false
	case fs.NArg() > maxArgs:
		fmt.Fprintf(stderr, "countersign %s: unexpected argument %q\n\n%s", name, fs.Arg(maxArgs), usage)
		return nil, 2, false
	}
	return fs.Args(), 0, true
}
