package resilience

// StopIdleWorkers stops the parked workers of default-mode Timeouts, so
// that a leak check after the tests sees only what was really left behind.
var StopIdleWorkers = stopIdleWorkers
