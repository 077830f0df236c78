//go:build race

package main

// raceEnabled tells the long sweeps that the race detector is on, so that
// they keep their running time reasonable: a simulation runs one goroutine
// at a time, and a few seeds show the detector all it can see.
const raceEnabled = true
