//go:build !race

package resilienceredis_test

const raceEnabled = false
