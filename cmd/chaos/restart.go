package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The PostgreSQL restart never touches a server other work uses: the run
// creates a cluster of its own (initdb in a temporary directory, on a free
// loopback port), runs on it, restarts it under load, and removes it.

// pgBinGlob is where Debian and Ubuntu install PostgreSQL's server
// binaries, one directory per major version.
const pgBinGlob = "/usr/lib/postgresql/*/bin"

// errNoServerBinaries says how to get what -restart-postgres needs.
var errNoServerBinaries = errors.New("-restart-postgres needs PostgreSQL's server binaries (initdb, pg_ctl) to create a cluster of its own, " +
	"and none were found in " + pgBinGlob + " or on PATH: install them (apt-get install postgresql) and run again")

// pgBinDir returns the directory of the newest initdb and pg_ctl found
// under glob, or else on PATH.
func pgBinDir(glob string) (string, error) {
	dirs, _ := filepath.Glob(glob)
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if executable(filepath.Join(d, "initdb")) && executable(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && executable(filepath.Join(filepath.Dir(p), "pg_ctl")) {
		return filepath.Dir(p), nil
	}
	return "", errNoServerBinaries
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// ownCluster is the PostgreSQL the run created for itself.
type ownCluster struct {
	bin, dir, data string
	port           int
	asUser         string // the OS user running the server ("" for the current one)
}

// URL is the cluster's admin URL.
func (c *ownCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// startOwnCluster creates and starts a cluster of the run's own; s stops
// and removes it. initdb refuses root, so root runs it (and the server) as
// the postgres OS user.
func startOwnCluster(ctx context.Context, s *scope, log func(string, ...any)) (*ownCluster, error) {
	bin, err := pgBinDir(pgBinGlob)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chaos-postgres-")
	if err != nil {
		return nil, err
	}
	c := &ownCluster{bin: bin, dir: dir, data: filepath.Join(dir, "data")}
	s.Cleanup(func() { os.RemoveAll(dir) })
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		pg, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, the cluster must run as another user, and there is no postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		c.asUser = "postgres"
	}
	if c.port, err = freePort(); err != nil {
		return nil, err
	}
	log("creating a PostgreSQL cluster of the run's own (%s) on port %d", filepath.Join(bin, "initdb"), c.port)
	if out, err := c.run(ctx, "initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", c.port, c.dir)
	if out, err := c.run(ctx, "pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "log"), "-o", opts, "-w", "start"); err != nil {
		return nil, fmt.Errorf("pg_ctl start: %v\n%s", err, out)
	}
	s.Cleanup(func() { _, _ = c.run(context.Background(), "pg_ctl", "-D", c.data, "-m", "immediate", "-w", "stop") })
	return c, nil
}

// restart restarts the cluster (fast shutdown: every connection cut) and
// waits until it accepts connections again.
func (c *ownCluster) restart(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.data, "-m", "fast", "-w", "restart"); err != nil {
		return fmt.Errorf("pg_ctl restart: %v\n%s", err, out)
	}
	return nil
}

// startedAt is when the cluster's server process started.
func startedAt(ctx context.Context, url string) (time.Time, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close(ctx)
	var at time.Time
	err = conn.QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&at)
	return at, err
}

func (c *ownCluster) run(ctx context.Context, name string, args ...string) (string, error) {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asUser != "" {
		cmd = exec.CommandContext(ctx, runuser(), append([]string{"-u", c.asUser, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	// Into a file, not a pipe: the server pg_ctl starts keeps the
	// descriptors it inherited, and a pipe would never close.
	out, err := os.CreateTemp("", "chaos-pg-output-")
	if err != nil {
		return "", err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	b, _ := os.ReadFile(out.Name())
	return strings.TrimSpace(string(b)), err
}

// freePort returns a loopback TCP port nothing listens on just now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// runuser is the runuser program: on the PATH, or where Debian keeps it
// (/usr/sbin, /sbin), which a PATH without the sbin directories misses.
func runuser() string {
	if path, err := exec.LookPath("runuser"); err == nil {
		return path
	}
	for _, path := range []string{"/usr/sbin/runuser", "/sbin/runuser"} {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	return "runuser"
}
