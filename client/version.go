package client

import (
	"runtime/debug"
	"sync"
)

// modulePath is the module the client is released in.
const modulePath = "github.com/countersign/countersign"

// Version returns the version of countersign's module the program was built
// with, as Go recorded it ("v1.4.0", or a pseudo-version for a commit), or
// "devel" when Go recorded none (a build inside countersign's own checkout).
// The client sends it as its User-Agent, countersign-go/<version>, so the
// server's operators can tell which clients call it.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	info, _ := debug.ReadBuildInfo()
	return versionIn(info)
})

// versionIn finds the module's version in a program's build information:
// the main module's when the program is countersign's, else its
// dependency's.
func versionIn(info *debug.BuildInfo) string {
	if info == nil {
		return "devel"
	}
	v := ""
	if info.Main.Path == modulePath {
		v = info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == modulePath {
			v = dep.Version
		}
	}
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}

// userAgent is the User-Agent of every call.
func userAgent() string { return "countersign-go/" + Version() }
