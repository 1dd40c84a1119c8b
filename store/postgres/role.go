package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrInvalidRoleName is returned for a role name GrantAppRole will not use.
var ErrInvalidRoleName = errors.New("invalid role name")

// ErrUnsafeAppRole is returned when an existing role holds more than a
// runtime role may: serve connected as it could change the schema or the
// audit trail whatever GrantAppRole grants.
var ErrUnsafeAppRole = errors.New("role cannot be the runtime role")

// roleName is the role names GrantAppRole accepts: lowercase, so that the
// name in a connection URL and the same name unquoted in SQL agree.
var roleName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidateRoleName reports whether name can be the runtime role's name.
func ValidateRoleName(name string) error {
	if !roleName.MatchString(name) {
		return fmt.Errorf("%w %q: use 1 to 63 lowercase letters, digits and underscores, not starting with a digit", ErrInvalidRoleName, name)
	}
	if strings.HasPrefix(name, "pg_") || name == "public" {
		return fmt.Errorf("%w %q: the name is reserved by PostgreSQL", ErrInvalidRoleName, name)
	}
	return nil
}

// appTables is what serve does to each table, and so all the runtime role
// may do there. Decisions, votes and the audit trail are written once and
// never changed. The retention sweep deletes settled requests with the rows
// that hang on them; it never deletes an event or a tombstone, so neither
// can the role. It reads the applied migration versions at start to know the
// schema is current.
var appTables = []struct{ table, privileges string }{
	{"requests", "SELECT, INSERT, UPDATE, DELETE"},
	{"decisions", "SELECT, INSERT, DELETE"},
	{"executions", "SELECT, INSERT, UPDATE, DELETE"},
	{"outbox", "SELECT, INSERT, UPDATE, DELETE"},
	{"cards", "SELECT, INSERT, UPDATE, DELETE"},
	{"callbacks", "SELECT, INSERT, UPDATE, DELETE"},
	{"events", "SELECT, INSERT"},
	{"votes", "SELECT, INSERT, DELETE"},
	{"tombstones", "SELECT, INSERT"},
	// audit verify reads the checkpoints; only the partition functions
	// below, running as the schema's owner, write them.
	{"audit_checkpoints", "SELECT"},
	{"audit_checkpoint_heads", "SELECT"},
	{"audit_floor", "SELECT"},
	{"surface_pacing", "SELECT, INSERT, UPDATE"},
	// Executions are flagged from restores as they are inserted; only
	// `countersign restore`, as the owner, writes them.
	{"restores", "SELECT"},
	// A grant is created and revoked, never deleted.
	{"grants", "SELECT, INSERT, UPDATE"},
	// Wrong tries at an email link, counted and deleted once expired.
	{"surface_attempts", "SELECT, INSERT, UPDATE, DELETE"},
	// A preview leaves with its request.
	{"previews", "SELECT, INSERT, UPDATE, DELETE"},
	// Each request's audit chain head: the chain's trigger, running as
	// serve, updates it (or inserts a request's first); it leaves with its
	// request.
	{"chain_heads", "SELECT, INSERT, UPDATE, DELETE"},
	{"goose_db_version", "SELECT"},
}

// appFunctions are the schema's functions serve calls by name (the audit
// chain's trigger calls countersign_event_hash as serve's role). Trigger
// functions run without an EXECUTE check, so serve needs none on them. The
// retention sweep creates and drops the partitions of events through the
// two SECURITY DEFINER functions, which run as the schema's owner and
// check their own bounds (docs/DECISIONS.md, "Audit partitions").
var appFunctions = []string{"countersign_card_state", "countersign_event_hash",
	"countersign_event_partitions_ahead", "countersign_drop_event_partitions"}

// schemaFunctions are the functions the migrations create. PostgreSQL lets
// PUBLIC execute every new function; GrantAppRole takes that back, so the
// runtime role executes only appFunctions.
var schemaFunctions = []string{
	"countersign_card_state", "countersign_effect_strings",
	"events_append_only", "bump_request_version", "countersign_vote_cast",
	"countersign_key_not_pruned", "countersign_event_hash", "countersign_event_chain",
	"countersign_event_partition", "countersign_event_partitions_ahead", "countersign_drop_event_partitions",
	"countersign_checkpoint_hash", "countersign_append_only", "countersign_execution_listed",
}

// AppRole is the runtime role GrantAppRole prepared.
type AppRole struct {
	Name   string
	Schema string // where countersign's tables are
	// Created is true when GrantAppRole created the role (LOGIN, no password).
	Created bool
	// Login is false for an existing NOLOGIN role: serve cannot connect as it.
	Login bool
	// RevokedFromPublic names each right PUBLIC held in the schema, and so
	// every role, this one included, that GrantAppRole took back
	// ("UPDATE on decisions"), in order.
	RevokedFromPublic []string
}

// GrantAppRole makes name the role serve runs as: it creates the role if it
// does not exist (LOGIN, without a password), then grants it exactly what
// serve needs on the migrated schema and revokes everything else it was
// granted there. The role owns nothing and cannot create, alter or drop
// objects, truncate, delete an event or a tombstone, or change the audit trail. What PUBLIC was
// granted in the schema (a right every role holds) is taken back too, and
// named in RevokedFromPublic: on the schema's tables, sequences and columns
// every right, on the schema CREATE, and EXECUTE on countersign's
// functions. Creating the role needs CREATEROLE. An existing role that
// is a superuser, has CREATEROLE, owns objects in the database or is a member
// of a role that does is refused with ErrUnsafeAppRole. Run it after Migrate,
// as the schema's owner, and again after each upgrade: it is idempotent.
func (d *Driver) GrantAppRole(ctx context.Context, name string) (role AppRole, err error) {
	if err := ValidateRoleName(name); err != nil {
		return AppRole{}, err
	}
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		role, err = grantAppRoleTx(ctx, tx, name)
		return err
	})
	return role, err
}

func grantAppRoleTx(ctx context.Context, tx pgx.Tx, name string) (AppRole, error) {
	role := AppRole{Name: name}
	// Replicas migrating at start wait for this, and two grants never race
	// to create the role.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockID)); err != nil {
		return role, fmt.Errorf("taking the migration lock: %w", err)
	}
	var schemaOID uint32
	err := tx.QueryRow(ctx, `SELECT n.nspname, n.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.oid = to_regclass('requests')`).Scan(&role.Schema, &schemaOID)
	if errors.Is(err, pgx.ErrNoRows) {
		return role, errors.New("the database has no countersign schema: apply the migrations first")
	} else if err != nil {
		return role, fmt.Errorf("finding the schema: %w", err)
	}

	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name).Scan(&exists); err != nil {
		return role, fmt.Errorf("looking up role %s: %w", name, err)
	}
	q := pgx.Identifier{name}.Sanitize()
	if !exists {
		if _, err := tx.Exec(ctx, "CREATE ROLE "+q+" LOGIN"); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42501" {
				return role, fmt.Errorf("creating role %s: this database user may not create roles; create it yourself (CREATE ROLE %s LOGIN PASSWORD '…') and run again: %w", name, name, err)
			}
			return role, fmt.Errorf("creating role %s: %w", name, err)
		}
		role.Created = true
	}

	var why string
	if err := tx.QueryRow(ctx, unsafeRoleQuery, name, schemaOID).Scan(&why, &role.Login); err != nil {
		return role, fmt.Errorf("checking role %s: %w", name, err)
	}
	if why != "" {
		return role, fmt.Errorf("%w: %s %s", ErrUnsafeAppRole, name, why)
	}
	// What GrantAppRole revokes is what was granted to the role itself; a
	// right it holds through a role it belongs to would survive, so such a
	// membership is refused, named with the right it carries.
	var via, right string
	err = tx.QueryRow(ctx, inheritedRightQuery, name, schemaOID).Scan(&via, &right)
	switch {
	case err == nil:
		return role, fmt.Errorf("%w: %s is a member of %s, which may %s; revoke the membership that leads to it (directly, or through a role between them) and run again",
			ErrUnsafeAppRole, name, via, right)
	case !errors.Is(err, pgx.ErrNoRows):
		return role, fmt.Errorf("checking the memberships of role %s: %w", name, err)
	}

	if role.RevokedFromPublic, err = namesOf(ctx, tx, publicRightsQuery, schemaOID, schemaFunctions); err != nil {
		return role, fmt.Errorf("listing the rights of PUBLIC: %w", err)
	}

	var database string
	if err := tx.QueryRow(ctx, `SELECT current_database()`).Scan(&database); err != nil {
		return role, err
	}
	d, s := pgx.Identifier{database}.Sanitize(), pgx.Identifier{role.Schema}.Sanitize()
	stmts := []string{
		// Start from nothing, so that running again also takes back what
		// anyone granted since.
		"REVOKE ALL ON DATABASE " + d + " FROM " + q,
		"REVOKE ALL ON SCHEMA " + s + " FROM " + q,
		"REVOKE ALL ON ALL TABLES IN SCHEMA " + s + " FROM " + q,
		"REVOKE ALL ON ALL SEQUENCES IN SCHEMA " + s + " FROM " + q,
		"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA " + s + " FROM " + q,
		// PostgreSQL 15 no longer lets PUBLIC create in the public schema;
		// older servers and older databases still do.
		"REVOKE CREATE ON SCHEMA " + s + " FROM PUBLIC",
		// What PUBLIC holds, every role holds, this one included. Revoking
		// a table's rights revokes its columns' too.
		"REVOKE ALL ON ALL TABLES IN SCHEMA " + s + " FROM PUBLIC",
		"REVOKE ALL ON ALL SEQUENCES IN SCHEMA " + s + " FROM PUBLIC",
		"GRANT CONNECT ON DATABASE " + d + " TO " + q,
		"GRANT USAGE ON SCHEMA " + s + " TO " + q,
	}
	for _, g := range appTables {
		stmts = append(stmts, "GRANT "+g.privileges+" ON TABLE "+s+"."+pgx.Identifier{g.table}.Sanitize()+" TO "+q)
	}
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return role, fmt.Errorf("granting role %s: %s: %w", name, stmt, err)
		}
	}

	// The sequences behind the identity columns of the tables serve inserts into.
	var inserted []string
	for _, g := range appTables {
		if strings.Contains(g.privileges, "INSERT") {
			inserted = append(inserted, g.table)
		}
	}
	sequences, err := namesOf(ctx, tx, `SELECT seq.oid::regclass::text FROM pg_class seq
JOIN pg_depend dep ON dep.classid = 'pg_class'::regclass AND dep.objid = seq.oid AND dep.deptype IN ('a', 'i')
JOIN pg_class tab ON tab.oid = dep.refobjid
WHERE seq.relkind = 'S' AND tab.relnamespace = $1 AND tab.relname = ANY($2)
ORDER BY 1`, schemaOID, inserted)
	if err != nil {
		return role, fmt.Errorf("listing sequences: %w", err)
	}
	ours, err := namesOf(ctx, tx, `SELECT p.oid::regprocedure::text FROM pg_proc p
WHERE p.pronamespace = $1 AND p.proname = ANY($2) ORDER BY 1`, schemaOID, schemaFunctions)
	if err != nil {
		return role, fmt.Errorf("listing functions: %w", err)
	}
	called, err := namesOf(ctx, tx, `SELECT p.oid::regprocedure::text FROM pg_proc p
WHERE p.pronamespace = $1 AND p.proname = ANY($2) ORDER BY 1`, schemaOID, appFunctions)
	if err != nil {
		return role, fmt.Errorf("listing functions: %w", err)
	}
	stmts = stmts[:0]
	if len(sequences) > 0 {
		stmts = append(stmts, "GRANT USAGE ON SEQUENCE "+strings.Join(sequences, ", ")+" TO "+q)
	}
	if len(ours) > 0 {
		stmts = append(stmts, "REVOKE EXECUTE ON FUNCTION "+strings.Join(ours, ", ")+" FROM PUBLIC")
	}
	if len(called) > 0 {
		stmts = append(stmts, "GRANT EXECUTE ON FUNCTION "+strings.Join(called, ", ")+" TO "+q)
	}
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return role, fmt.Errorf("granting role %s: %s: %w", name, stmt, err)
		}
	}
	return role, nil
}

// unsafeRoleQuery says why role $1 cannot be the runtime role (empty if it
// can) and whether it may log in; $2 is the schema's oid. Membership counts
// because a member can SET ROLE to what it belongs to.
const unsafeRoleQuery = `
SELECT CASE
	WHEN r.rolname IN (current_user, session_user)
		THEN 'is the role running this migration'
	WHEN EXISTS (SELECT 1 FROM pg_roles p WHERE (p.rolsuper OR p.rolcreaterole) AND pg_has_role(r.oid, p.oid, 'MEMBER'))
		THEN 'is, or is a member of, a superuser or a role with CREATEROLE'
	WHEN EXISTS (SELECT 1 FROM pg_shdepend d JOIN pg_database db ON db.oid = d.dbid
			WHERE db.datname = current_database() AND d.refobjid = r.oid AND d.deptype = 'o')
		THEN 'owns objects in this database'
	WHEN EXISTS (
		SELECT 1 FROM (
			SELECT datdba AS owner FROM pg_database WHERE datname = current_database()
			UNION SELECT nspowner FROM pg_namespace WHERE oid = $2
			UNION SELECT relowner FROM pg_class WHERE relnamespace = $2
			UNION SELECT proowner FROM pg_proc WHERE pronamespace = $2
		) o WHERE pg_has_role(r.oid, o.owner, 'MEMBER'))
		THEN 'owns, or is a member of a role that owns, the database, the schema or objects in it'
	WHEN EXISTS (SELECT 1 FROM pg_roles p
			WHERE p.rolname IN ('pg_write_all_data', 'pg_execute_server_program', 'pg_write_server_files')
			AND pg_has_role(r.oid, p.oid, 'MEMBER'))
		THEN 'is a member of pg_write_all_data, pg_execute_server_program or pg_write_server_files'
	ELSE ''
END, r.rolcanlogin
FROM pg_roles r WHERE r.rolname = $1`

// inheritedRightQuery finds a role that role $1 is a member of (directly or
// not, whether it inherits or may only SET ROLE) and that was granted a
// right on the schema ($2's oid) or on a table, sequence or function in it:
// the first such role and the right, or no row. Only grants to that role
// itself count (aclexplode), so the role named is the one that holds it.
const inheritedRightQuery = `
SELECT m.rolname::text, rights.what FROM pg_roles r
JOIN pg_roles m ON m.oid <> r.oid AND pg_has_role(r.oid, m.oid, 'MEMBER')
CROSS JOIN LATERAL (
	SELECT a.privilege_type || ' on ' || c.oid::regclass::text AS what
	FROM pg_class c, aclexplode(c.relacl) a
	WHERE c.relnamespace = $2 AND a.grantee = m.oid
	UNION ALL
	SELECT a.privilege_type || ' on the schema' FROM pg_namespace n, aclexplode(n.nspacl) a
	WHERE n.oid = $2 AND a.grantee = m.oid
	UNION ALL
	SELECT a.privilege_type || ' on ' || f.oid::regprocedure::text FROM pg_proc f, aclexplode(f.proacl) a
	WHERE f.pronamespace = $2 AND a.grantee = m.oid
	LIMIT 1
) rights
WHERE r.rolname = $1
ORDER BY m.rolname
LIMIT 1`

// publicRightsQuery names every right granted to PUBLIC (grantee 0) in the
// schema ($1's oid) that GrantAppRole takes back: on tables, partitions,
// views and sequences, on their columns, CREATE on the schema (USAGE stays:
// it only lets names be looked up), and EXECUTE on countersign's own
// functions ($2), granted explicitly. Sorted, one right a row.
const publicRightsQuery = `
SELECT what FROM (
	SELECT a.privilege_type || ' on ' || c.oid::regclass::text FROM pg_class c, aclexplode(c.relacl) a
	WHERE c.relnamespace = $1 AND a.grantee = 0
	UNION
	SELECT a.privilege_type || ' (' || quote_ident(att.attname) || ') on ' || c.oid::regclass::text
	FROM pg_class c JOIN pg_attribute att ON att.attrelid = c.oid, aclexplode(att.attacl) a
	WHERE c.relnamespace = $1 AND a.grantee = 0
	UNION
	SELECT a.privilege_type || ' on schema ' || quote_ident(n.nspname) FROM pg_namespace n, aclexplode(n.nspacl) a
	WHERE n.oid = $1 AND a.grantee = 0 AND a.privilege_type <> 'USAGE'
	UNION
	SELECT a.privilege_type || ' on ' || f.oid::regprocedure::text FROM pg_proc f, aclexplode(f.proacl) a
	WHERE f.pronamespace = $1 AND f.proname = ANY($2) AND a.grantee = 0
) rights(what)
ORDER BY what COLLATE "C"`

// namesOf runs a query returning one text column.
func namesOf(ctx context.Context, db dbtx, sql string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
