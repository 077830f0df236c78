package main

import (
	"math/rand/v2"
	"time"

	"github.com/faf87a20/resilience"
)

// contentionStrategy is one backoff strategy of the contention scenario.
// New builds the backoff one client uses, drawing its randomness from r.
type contentionStrategy struct {
	Name string
	New  func(r *rand.Rand) resilience.Backoff
}

// backoffParams are the contention scenario's backoff settings.
type backoffParams struct {
	Base time.Duration
	Cap  time.Duration
}

// contentionStrategies returns the six strategies of the contention scenario.
func contentionStrategies(p backoffParams) []contentionStrategy { return standinStrategies(p) }
