// Package mutant plants known bugs in the core code so that the chaos run
// can prove it catches them (cmd/chaos -mutants, make chaos-mutants).
//
// A planted bug is one line at the place it breaks:
//
//	if mutant.On("name") { … }
//
// In every normal build On and Every are constant false (mutant_off.go),
// so the compiler removes the planted lines and their names: the release
// binary has none of them (TestReleaseBinaryHasNoMutants). Built with the
// chaosmutant tag, the environment variable COUNTERSIGN_CHAOS_MUTANT names
// the one bug that is switched on.
package mutant
