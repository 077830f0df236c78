//go:build race

package resilienceredis_test

// raceEnabled tells the allocation pin that sync.Pool drops items at random
// under the race detector.
const raceEnabled = true
