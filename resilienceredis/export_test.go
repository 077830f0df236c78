package resilienceredis

// StopIdleWorkers ends every parked worker, so that the tests can check
// that nothing else is left running.
var StopIdleWorkers = workers.stop
