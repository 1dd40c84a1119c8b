package postgres_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// appRolePrivileges is what the runtime role may do, object by object; every
// table, sequence and function of the schema is listed, so one added by a
// migration must be decided on here.
var appRolePrivileges = map[string][]string{
	// The retention sweep deletes settled requests and what hangs on them.
	"table requests":         {"SELECT", "INSERT", "UPDATE", "DELETE"},
	"table decisions":        {"SELECT", "INSERT", "DELETE"},
	"table executions":       {"SELECT", "INSERT", "UPDATE", "DELETE"},
	"table outbox":           {"SELECT", "INSERT", "UPDATE", "DELETE"},
	"table cards":            {"SELECT", "INSERT", "UPDATE", "DELETE"},
	"table callbacks":        {"SELECT", "INSERT", "UPDATE", "DELETE"},
	"table events":           {"SELECT", "INSERT"},
	"table goose_db_version": {"SELECT"},
	"table votes":            {"SELECT", "INSERT", "DELETE"},
	"table tombstones":       {"SELECT", "INSERT"},
	// Read by audit verify; the events partitions are reached through
	// events only (partitions are left out here: TestAppRoleHasNoRightOnAPartition).
	"table audit_checkpoints":      {"SELECT"},
	"table audit_checkpoint_heads": {"SELECT"},
	"table audit_floor":            {"SELECT"},
	// The shared Slack budget: one row per channel, moved on and paused.
	"table surface_pacing": {"SELECT", "INSERT", "UPDATE"},
	// Read as executions are inserted; written by restore as the owner.
	"table restores":           {"SELECT"},
	"sequence restores_id_seq": nil,
	// Standing grants are created and revoked, never deleted.
	"table grants": {"SELECT", "INSERT", "UPDATE"},
	// Wrong tries at an email link, counted and deleted once expired.
	"table surface_attempts": {"SELECT", "INSERT", "UPDATE", "DELETE"},
	// A request's preview: claimed, recorded, and deleted with its request.
	"table previews": {"SELECT", "INSERT", "UPDATE", "DELETE"},
	// Each request's audit chain head, written by the chain's trigger as
	// serve and deleted with its request.
	"table chain_heads": {"SELECT", "INSERT", "UPDATE", "DELETE"},

	"sequence decisions_id_seq":         {"USAGE"},
	"sequence executions_id_seq":        {"USAGE"},
	"sequence outbox_id_seq":            {"USAGE"},
	"sequence events_id_seq":            {"USAGE"},
	"sequence votes_id_seq":             {"USAGE"},
	"sequence callbacks_id_seq":         {"USAGE"},
	"sequence goose_db_version_id_seq":  nil,
	"sequence audit_checkpoints_id_seq": nil,

	"function countersign_card_state":     {"EXECUTE"},
	"function countersign_effect_strings": nil,
	"function events_append_only":         nil,
	"function bump_request_version":       nil,
	"function countersign_vote_cast":      nil,
	"function countersign_key_not_pruned": nil,
	"function countersign_event_hash":     {"EXECUTE"},
	"function countersign_event_chain":    nil,
	// The retention sweep's partition functions, SECURITY DEFINER.
	"function countersign_event_partitions_ahead": {"EXECUTE"},
	"function countersign_drop_event_partitions":  {"EXECUTE"},
	"function countersign_event_partition":        nil,
	"function countersign_checkpoint_hash":        nil,
	"function countersign_append_only":            nil,
	"function countersign_execution_listed":       nil,

	"schema public": {"USAGE"},
}

// privilegesOf reads, as the owner, what role may do on every object of the
// public schema: the privileges granted to it or to PUBLIC.
func privilegesOf(t *testing.T, owner *postgres.Driver, role string) map[string][]string {
	t.Helper()
	rows, err := owner.Pool.Query(context.Background(), `
SELECT 'table ' || c.relname, p FROM pg_class c,
	unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
	AND has_table_privilege($1, c.oid, p)
UNION ALL
SELECT 'table ' || c.relname, NULL FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
UNION ALL
SELECT 'sequence ' || c.relname, p FROM pg_class c, unnest(ARRAY['USAGE', 'SELECT', 'UPDATE']) p
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'S' AND has_sequence_privilege($1, c.oid, p)
UNION ALL
SELECT 'sequence ' || c.relname, NULL FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'S'
UNION ALL
SELECT 'function ' || f.proname, 'EXECUTE' FROM pg_proc f
WHERE f.pronamespace = 'public'::regnamespace AND has_function_privilege($1, f.oid, 'EXECUTE')
UNION ALL
SELECT 'function ' || f.proname, NULL FROM pg_proc f WHERE f.pronamespace = 'public'::regnamespace
UNION ALL
SELECT 'schema public', p FROM unnest(ARRAY['USAGE', 'CREATE']) p WHERE has_schema_privilege($1, 'public', p)
UNION ALL
SELECT 'schema public', NULL`, role)
	if err != nil {
		t.Fatal(err)
	}
	type grant struct {
		Object    string
		Privilege *string
	}
	grants, err := pgx.CollectRows(rows, pgx.RowToStructByPos[grant])
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, g := range grants {
		if g.Privilege == nil {
			got[g.Object] = append(got[g.Object], []string{}...)
			continue
		}
		got[g.Object] = append(got[g.Object], *g.Privilege)
	}
	for k := range got {
		slices.Sort(got[k])
	}
	return got
}

// assertAppRolePrivileges fails unless role may do exactly what serve needs.
func assertAppRolePrivileges(t *testing.T, owner *postgres.Driver, role string) {
	t.Helper()
	got := privilegesOf(t, owner, role)
	for _, object := range slices.Sorted(maps.Keys(got)) {
		want, listed := appRolePrivileges[object]
		if !listed {
			t.Errorf("%s is not listed in appRolePrivileges: decide what the runtime role may do on it", object)
			continue
		}
		want = slices.Sorted(slices.Values(want))
		if !slices.Equal(got[object], want) {
			t.Errorf("%s: the runtime role may %v, want %v", object, got[object], want)
		}
	}
	for object := range appRolePrivileges {
		if _, ok := got[object]; !ok {
			t.Errorf("%s is listed but not in the schema", object)
		}
	}

	ctx := context.Background()
	var super, createRole, createDB, replication, bypassRLS, connect, createInDB, publicCreate bool
	var owned int
	if err := owner.Pool.QueryRow(ctx, `
SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls,
	has_database_privilege(r.oid, current_database(), 'CONNECT'),
	has_database_privilege(r.oid, current_database(), 'CREATE'),
	has_schema_privilege('public', 'public', 'CREATE'),
	(SELECT count(*) FROM pg_shdepend d WHERE d.refobjid = r.oid AND d.deptype = 'o')
FROM pg_roles r WHERE r.rolname = $1`, role).Scan(&super, &createRole, &createDB, &replication, &bypassRLS,
		&connect, &createInDB, &publicCreate, &owned); err != nil {
		t.Fatal(err)
	}
	if super || createRole || createDB || replication || bypassRLS {
		t.Errorf("the runtime role has attributes: superuser %v, createrole %v, createdb %v, replication %v, bypassrls %v",
			super, createRole, createDB, replication, bypassRLS)
	}
	if !connect || createInDB {
		t.Errorf("on the database the runtime role has CONNECT %v, CREATE %v; want CONNECT only", connect, createInDB)
	}
	if publicCreate {
		t.Error("PUBLIC may create in the public schema")
	}
	if owned != 0 {
		t.Errorf("the runtime role owns %d objects", owned)
	}
}

// asAppRole returns a fresh migrated database's owner pool, a pool connected
// as a runtime role prepared by GrantAppRole, and the role's name.
func asAppRole(t *testing.T) (owner, app *postgres.Driver, role string) {
	t.Helper()
	ctx := context.Background()
	url := storetest.NewURL(t)
	appURL := storetest.NewAppRoleURL(t, url)
	owner, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	if app, err = postgres.Open(ctx, appURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	if err := app.Pool.QueryRow(ctx, `SELECT current_user`).Scan(&role); err != nil {
		t.Fatalf("connecting as the runtime role: %v", err)
	}
	if role == "postgres" || !strings.HasPrefix(role, "cs_app_") {
		t.Fatalf("connected as %s, not as the runtime role", role)
	}
	return owner, app, role
}

func TestAppRoleHasExactlyWhatServeNeeds(t *testing.T) {
	t.Parallel()
	owner, _, role := asAppRole(t)
	assertAppRolePrivileges(t, owner, role)
}

// Connected as the runtime role, nothing can change the schema, the audit
// triggers or the audit trail: each attempt is refused by a privilege check,
// before any trigger would run.
func TestAppRoleCannotChangeTheSchemaOrTheAuditTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, app, _ := asAppRole(t)
	req := insertRequest(t, store.NewLedger(app, store.Options{}), "wa_role_audit")
	if _, _, ok, err := store.NewLedger(app, store.Options{}).Decide(ctx, decide(req, store.VerdictApprove, "U1")); err != nil || !ok {
		t.Fatalf("deciding as the runtime role: %v, %v", ok, err)
	}
	eventsBefore := countRows(t, owner, `SELECT count(*) FROM events`)
	if eventsBefore < 2 {
		t.Fatalf("%d events after intake and a decision", eventsBefore)
	}

	for _, stmt := range []string{
		`ALTER TABLE events DISABLE TRIGGER ALL`,
		`ALTER TABLE events DISABLE TRIGGER events_no_update_delete`,
		`ALTER TABLE events DISABLE TRIGGER events_no_truncate`,
		`ALTER TABLE events DISABLE TRIGGER events_chain`,
		`DROP TRIGGER events_chain ON events`,
		`DROP TRIGGER events_no_update_delete ON events`,
		`DROP TRIGGER events_no_truncate ON events`,
		`DROP FUNCTION events_append_only() CASCADE`,
		`CREATE OR REPLACE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$`,
		`DELETE FROM events`,
		`UPDATE events SET actor = 'someone else'`,
		`TRUNCATE events`,
		`TRUNCATE requests CASCADE`,
		`DROP TABLE events`,
		`ALTER TABLE events ADD COLUMN note text`,
		`ALTER TABLE events RENAME TO events_old`,
		`ALTER TABLE requests DROP CONSTRAINT requests_key_key`,
		`ALTER TABLE executions DROP COLUMN snapshot_hash`,
		`ALTER TABLE decisions OWNER TO CURRENT_USER`,
		`COMMENT ON TABLE events IS 'nothing to see'`,
		`UPDATE decisions SET verdict = 'reject'`,
		`DELETE FROM tombstones`,
		`UPDATE tombstones SET status = 'succeeded'`,
		`TRUNCATE tombstones`,
		`CREATE TABLE shadow (id int)`,
		`CREATE VIEW shadow AS SELECT 1`,
		`CREATE FUNCTION shadow() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
		`CREATE TRIGGER shadow BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_append_only()`,
		`CREATE SCHEMA shadow`,
		`SELECT countersign_effect_strings('{}')`,
		`SET ROLE postgres`,
		// The partitions, the checkpoints and the floor of the audit window.
		`DROP TABLE events_default`,
		`ALTER TABLE events DETACH PARTITION events_default`,
		`TRUNCATE events_default`,
		`DELETE FROM events_default`,
		`SELECT countersign_event_partition(now())`,
		`UPDATE audit_floor SET keep = '0'`,
		`DELETE FROM audit_checkpoints`,
		`INSERT INTO audit_checkpoint_heads (checkpoint_id, request_id, seq, hash) VALUES (1, gen_random_uuid(), 1, 'x')`,
	} {
		_, err := app.Pool.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" || strings.Contains(pgErr.Message, "append-only") {
			t.Errorf("%s: %v; want a privilege refusal (42501)", stmt, err)
		}
	}

	// What the runtime role may call creates months ahead, as their owner.
	var created int
	if err := app.Pool.QueryRow(ctx, `SELECT countersign_event_partitions_ahead(3)`).Scan(&created); err != nil || created != 1 {
		t.Errorf("countersign_event_partitions_ahead(3) as the runtime role = %d, %v; want the one month past the migration's", created, err)
	}
	// What the runtime role may call drops no month younger than the floor.
	var dropped int
	if err := app.Pool.QueryRow(ctx, `SELECT countersign_drop_event_partitions(now() + interval '10 years')`).Scan(&dropped); err != nil || dropped != 0 {
		t.Errorf("countersign_drop_event_partitions as the runtime role = %d, %v; want 0 dropped", dropped, err)
	}
	if n := countRows(t, owner, `SELECT count(*) FROM events`); n != eventsBefore {
		t.Errorf("%d events, was %d", n, eventsBefore)
	}
	if n := countRows(t, owner, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'events'::regclass AND NOT tgisinternal AND tgenabled = 'O'`); n != 3 {
		t.Errorf("%d enabled triggers on events, want 3 (append-only twice, and the chain)", n)
	}
	if n := countRows(t, owner, `SELECT count(*) FROM pg_class WHERE relname = 'shadow' OR relname = 'events_old'`); n != 0 {
		t.Errorf("%d relations created by the runtime role", n)
	}
}

func countRows(t *testing.T, db *postgres.Driver, sql string) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Running the grant again changes nothing it granted and takes back whatever
// was granted to the role since.
func TestGrantAppRoleAgainTakesBackExtras(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	owner, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	name := storetest.NewRoleName(t, url)
	first, err := owner.GrantAppRole(ctx, name)
	if err != nil || !first.Created || !first.Login || first.Schema != "public" {
		t.Fatalf("first grant = %+v, %v", first, err)
	}
	for _, stmt := range []string{
		`GRANT ALL ON events, decisions, requests TO ` + name,
		`GRANT ALL ON SCHEMA public TO ` + name,
		`GRANT CREATE ON SCHEMA public TO PUBLIC`,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ` + name,
		`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO PUBLIC`,
		`GRANT ALL ON ALL FUNCTIONS IN SCHEMA public TO ` + name,
	} {
		if _, err := owner.Pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if got := privilegesOf(t, owner, name); slices.Contains(got["table events"], "DELETE") == false {
		t.Fatal("the extra grants did not land")
	}
	again, err := owner.GrantAppRole(ctx, name)
	if err != nil || again.Created {
		t.Fatalf("second grant = %+v, %v", again, err)
	}
	assertAppRolePrivileges(t, owner, name)
}

// A right granted to PUBLIC is every role's, the runtime role's too: the
// grant takes it back as it does the role's own, and names each one; on a
// database where PUBLIC holds nothing in the schema it names none.
func TestGrantAppRoleTakesBackWhatPublicHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	owner, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	name := storetest.NewRoleName(t, url)
	first, err := owner.GrantAppRole(ctx, name)
	if err != nil || len(first.RevokedFromPublic) != 0 {
		t.Fatalf("first grant = %+v, %v; want nothing taken from PUBLIC", first, err)
	}
	for _, stmt := range []string{
		`GRANT UPDATE ON decisions TO PUBLIC`,
		`GRANT DELETE, TRUNCATE ON events TO PUBLIC`,
		`GRANT UPDATE (verdict) ON votes TO PUBLIC`,
		`GRANT USAGE, UPDATE ON SEQUENCE events_id_seq TO PUBLIC`,
		`GRANT CREATE ON SCHEMA public TO PUBLIC`,
		`GRANT EXECUTE ON FUNCTION countersign_vote_cast() TO PUBLIC`,
	} {
		if _, err := owner.Pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if got := privilegesOf(t, owner, name); !slices.Contains(got["table decisions"], "UPDATE") {
		t.Fatal("the grants to PUBLIC did not reach the role")
	}
	again, err := owner.GrantAppRole(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"CREATE on schema public",
		"DELETE on events",
		"EXECUTE on countersign_vote_cast()",
		"TRUNCATE on events",
		"UPDATE (verdict) on votes",
		"UPDATE on decisions",
		"UPDATE on events_id_seq",
		"USAGE on events_id_seq",
	}
	if !slices.Equal(again.RevokedFromPublic, want) {
		t.Errorf("RevokedFromPublic = %q, want %q", again.RevokedFromPublic, want)
	}
	assertAppRolePrivileges(t, owner, name)
	var columns int
	if err := owner.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_attribute, aclexplode(attacl) a
WHERE attrelid = 'votes'::regclass AND a.grantee = 0`).Scan(&columns); err != nil || columns != 0 {
		t.Errorf("PUBLIC still holds %d column rights on votes (%v)", columns, err)
	}
	if third, err := owner.GrantAppRole(ctx, name); err != nil || len(third.RevokedFromPublic) != 0 {
		t.Errorf("third grant = %+v, %v; want nothing left to take from PUBLIC", third, err)
	}
}

func TestGrantAppRoleRefusesBadNamesAndPowerfulRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	owner, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(owner.Close)
	exec := func(sql string) {
		t.Helper()
		if _, err := owner.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	for _, name := range []string{"", "App", "1app", "app-role", `app"; DROP TABLE events; --`, "pg_app", "public", strings.Repeat("a", 64)} {
		if _, err := owner.GrantAppRole(ctx, name); !errors.Is(err, postgres.ErrInvalidRoleName) {
			t.Errorf("GrantAppRole(%q) = %v, want ErrInvalidRoleName", name, err)
		}
		if n := countRows(t, owner, `SELECT count(*) FROM pg_roles WHERE rolname = '`+strings.ReplaceAll(name, "'", "''")+`'`); n != 0 {
			t.Errorf("a role %q exists", name)
		}
	}

	superuser := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + superuser + ` SUPERUSER`)
	creator := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + creator + ` CREATEROLE`)
	tableOwner := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + tableOwner)
	exec(`ALTER TABLE cards OWNER TO ` + tableOwner)
	member := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + member + ` LOGIN IN ROLE ` + tableOwner)
	writer := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + writer + ` LOGIN IN ROLE pg_write_all_data`)
	for name, why := range map[string]string{
		"postgres": "is the role running this migration",
		superuser:  "superuser",
		creator:    "CREATEROLE",
		tableOwner: "owns objects in this database",
		member:     "is a member of a role that owns",
		writer:     "pg_write_all_data",
	} {
		_, err := owner.GrantAppRole(ctx, name)
		if !errors.Is(err, postgres.ErrUnsafeAppRole) || !strings.Contains(err.Error(), why) {
			t.Errorf("GrantAppRole(%s) = %v, want ErrUnsafeAppRole saying %q", name, err, why)
		}
		if name == "postgres" || name == superuser || name == writer {
			continue // they may do all this anyway
		}
		if got := privilegesOf(t, owner, name); len(got["table events"]) != 0 || len(got["table requests"]) != 0 {
			t.Errorf("the refused role %s was granted %v on events, %v on requests", name, got["table events"], got["table requests"])
		}
	}

	// Rights held through a role the app role belongs to would survive the
	// grant's revokes: the membership is refused, naming the role and a
	// right, until it is revoked. A membership that carries no right on
	// the schema is fine.
	helper := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + helper + ` NOLOGIN`)
	exec(`GRANT UPDATE ON decisions TO ` + helper)
	exec(`GRANT DELETE ON votes TO ` + helper)
	harmless := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + harmless + ` NOLOGIN`)
	inheritor := storetest.NewRoleName(t, url)
	exec(`CREATE ROLE ` + inheritor + ` LOGIN IN ROLE ` + harmless)
	exec(`GRANT ` + helper + ` TO ` + harmless) // two steps away
	_, err = owner.GrantAppRole(ctx, inheritor)
	if !errors.Is(err, postgres.ErrUnsafeAppRole) || !strings.Contains(err.Error(), inheritor+" is a member of "+helper+", which may UPDATE on decisions") {
		t.Errorf("GrantAppRole through a helper role = %v", err)
	}
	if got := privilegesOf(t, owner, inheritor); len(got["table requests"]) != 0 {
		t.Errorf("the refused role was granted %v on requests", got["table requests"])
	}
	exec(`REVOKE ` + helper + ` FROM ` + harmless)
	if _, err := owner.GrantAppRole(ctx, inheritor); err != nil {
		t.Errorf("GrantAppRole once the helper's membership is revoked = %v", err)
	}
	assertAppRolePrivileges(t, owner, inheritor)

	empty, err := postgres.Open(ctx, storetest.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(empty.Close)
	unmigrated := storetest.NewRoleName(t, url)
	if _, err := empty.GrantAppRole(ctx, unmigrated); err == nil || !strings.Contains(err.Error(), "apply the migrations first") {
		t.Errorf("GrantAppRole on an empty database = %v", err)
	}
	if n := countRows(t, owner, `SELECT count(*) FROM pg_roles WHERE rolname = '`+unmigrated+`'`); n != 0 {
		t.Error("the role was created on an unmigrated database")
	}
}

// serve migrates at start: as the runtime role, a current schema needs no
// privilege beyond reading the applied versions, and a schema with
// migrations pending is refused with an error that says what to do.
func TestMigrateAsAppRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	owner, app, _ := asAppRole(t)
	if n, err := app.Migrate(ctx, nil); err != nil || n != 0 {
		t.Fatalf("Migrate as the runtime role on a current schema = %d, %v", n, err)
	}
	versions := countRows(t, owner, `SELECT count(*) FROM goose_db_version`)
	if _, err := owner.Pool.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)`); err != nil {
		t.Fatal(err)
	}
	if n, err := app.Migrate(ctx, nil); !errors.Is(err, postgres.ErrMigratePrivilege) || n != 0 {
		t.Fatalf("Migrate as the runtime role with a migration pending = %d, %v; want ErrMigratePrivilege", n, err)
	}
	if n := countRows(t, owner, `SELECT count(*) FROM goose_db_version`); n != versions-1 {
		t.Fatalf("%d versions recorded, want %d", n, versions-1)
	}
}
