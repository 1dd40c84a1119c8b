package main

import (
	"fmt"
	"net/url"
	"os/exec"
	"os/user"
	"strings"

	"github.com/countersign/countersign/store/storetest"
)

// restartPlan is the command that restarts the PostgreSQL cluster serving
// the chaos database, or nil and why it cannot be run: not asked for, no
// pg_lsclusters (not a Debian-style install), no cluster on that port, or a
// user who may not restart it (only root or the cluster's owner may).
func restartPlan(enabled bool, username string, clusters func() (string, error)) ([]string, string) {
	if !enabled {
		return nil, "not asked for (-restart-postgres=false)"
	}
	port := "5432"
	if u, err := url.Parse(storetest.AdminURL()); err == nil && u.Port() != "" {
		port = u.Port()
	}
	out, err := clusters()
	if err != nil {
		return nil, fmt.Sprintf("pg_lsclusters is not available (%v); restart PostgreSQL by hand to exercise this fault", err)
	}
	for _, line := range strings.Split(out, "\n") {
		// Ver Cluster Port Status Owner Data-directory Log-file
		f := strings.Fields(line)
		if len(f) < 5 || f[2] != port {
			continue
		}
		if username != "root" && username != f[4] {
			return nil, fmt.Sprintf("user %s may not restart cluster %s/%s (owned by %s); run as root or %s to exercise this fault", username, f[0], f[1], f[4], f[4])
		}
		return []string{"pg_ctlcluster", f[0], f[1], "restart"}, ""
	}
	return nil, fmt.Sprintf("no local cluster listens on port %s", port)
}

func pgClusters() (string, error) {
	out, err := exec.Command("pg_lsclusters", "--no-header").Output()
	return string(out), err
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

func runCommand(argv []string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}
