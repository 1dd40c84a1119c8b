package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/store/postgres"
)

const migrateUsage = `usage: countersign migrate [--app-role NAME]

Applies the database migrations and exits (serve also applies them at start,
when its database role may).

  --app-role NAME   then prepare NAME as the role serve runs as: create it if
                    it does not exist (LOGIN, no password), and grant it
                    exactly what serve needs and nothing more. It cannot
                    create, alter or drop tables, disable the audit triggers,
                    or delete and change the audit trail. What PUBLIC was
                    granted in the schema (every role holds it, NAME too) is
                    taken back, and each right is named. Needs PostgreSQL;
                    run it as the owner of the schema, and again after each
                    upgrade; creating NAME needs CREATEROLE (or create it
                    yourself first). Then run serve with
                    COUNTERSIGN_DATABASE_URL connecting as NAME.
`

// migrateOptions are migrate's command-line flags.
type migrateOptions struct {
	appRole string
}

// parseMigrateArgs reads migrate's flags. When ok is false the command ends
// with code: 0 after --help, 2 after a usage error.
func parseMigrateArgs(args []string, stdout, stderr io.Writer) (opts migrateOptions, code int, ok bool) {
	_, code, ok = parseArgs("migrate", migrateUsage, args, 0, func(fs *flag.FlagSet) {
		fs.StringVar(&opts.appRole, "app-role", "", "")
	}, stdout, stderr)
	return opts, code, ok
}

// appRoleGranter is a driver that can prepare the role serve runs as:
// PostgreSQL's.
type appRoleGranter interface {
	GrantAppRole(ctx context.Context, name string) (postgres.AppRole, error)
}

// migrate applies pending migrations to the configured store and, with
// --app-role, prepares the role serve runs as.
func migrate(ctx context.Context, opts migrateOptions, getenv func(string) string, stdout io.Writer) error {
	if opts.appRole != "" {
		if err := postgres.ValidateRoleName(opts.appRole); err != nil {
			return fmt.Errorf("--app-role: %w", err)
		}
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	if opts.appRole != "" && cfg.DatabaseURL == "" {
		return errors.New("--app-role needs PostgreSQL: set COUNTERSIGN_DATABASE_URL (the embedded store has no roles)")
	}
	s, where, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	n, err := s.Migrate(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migrations to %s\n", n, where)
	if opts.appRole == "" {
		return nil
	}
	db, ok := s.Driver().(appRoleGranter)
	if !ok {
		return errors.New("--app-role needs PostgreSQL")
	}
	role, err := db.GrantAppRole(ctx, opts.appRole)
	if err != nil {
		return err
	}
	if role.Created {
		fmt.Fprintf(stdout, "created role %s (LOGIN, no password: set one with ALTER ROLE %s PASSWORD '…', or let your server authenticate it another way)\n", role.Name, role.Name)
	}
	if len(role.RevokedFromPublic) > 0 {
		// Other roles relied on these too: the operator should know.
		fmt.Fprintf(stdout, "revoked from PUBLIC, whose rights every role holds (%s included), on schema %s: %s\n",
			role.Name, role.Schema, strings.Join(role.RevokedFromPublic, "; "))
	}
	fmt.Fprintf(stdout, "granted role %s what serve needs on schema %s, and nothing more; run serve connecting as %s\n", role.Name, role.Schema, role.Name)
	if !role.Login {
		fmt.Fprintf(stdout, "note: role %s cannot log in (NOLOGIN); ALTER ROLE %s LOGIN before serve connects as it\n", role.Name, role.Name)
	}
	return nil
}
