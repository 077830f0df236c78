//go:build race

package resilience_test

// raceEnabled tells stress tests that the race detector is on, so they can
// keep their running time reasonable.
const raceEnabled = true
