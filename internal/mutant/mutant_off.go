//go:build !chaosmutant

package mutant

// On reports whether the planted bug name is switched on: never, in a
// build without the chaosmutant tag.
func On(name string) bool { return false }

// Every reports whether the planted bug name strikes this time, once in n
// calls: never, in a build without the chaosmutant tag.
func Every(name string, n int) bool { return false }
