package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if a simulated task outlives its run.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
