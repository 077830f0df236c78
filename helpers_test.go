package resilience_test

import "runtime"

// runtimeGoexit ends the calling goroutine, as t.FailNow does.
func runtimeGoexit() { runtime.Goexit() }
