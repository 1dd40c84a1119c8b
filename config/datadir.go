package config

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
)

// DataDir is where the embedded store and the local agent token live:
// COUNTERSIGN_DATA_DIR, else the platform's per-user data directory.
func DataDir(getenv func(string) string) (string, error) {
	if d := getenv("COUNTERSIGN_DATA_DIR"); d != "" {
		return d, nil
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" && runtime.GOOS != "openbsd" {
		base, err := os.UserConfigDir() // ~/Library/Application Support, %AppData%
		if err != nil {
			return "", fmt.Errorf("finding a data directory (set COUNTERSIGN_DATA_DIR): %w", err)
		}
		return filepath.Join(base, "countersign"), nil
	}
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "countersign"), nil
	}
	home := getenv("HOME")
	if home == "" {
		// An empty environment (env -i, a bare container or unit) still
		// has a user: its home directory from the password database.
		if u, err := user.Current(); err == nil && u.HomeDir != "" && u.HomeDir != "/" {
			home = u.HomeDir
		}
	}
	if home == "" {
		return "", errors.New("neither COUNTERSIGN_DATA_DIR nor HOME is set, and the user has no home directory, so there is nowhere to keep the embedded store")
	}
	return filepath.Join(home, ".local", "share", "countersign"), nil
}
