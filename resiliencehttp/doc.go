// Package resiliencehttp brings the policies and guards of package
// resilience to net/http: a client [Transport] that retries what is safe to
// retry, honours Retry-After, replays request bodies, drains what it drops
// and keeps the returned body readable under its deadlines; a server
// [Handler] that sheds load with 503 or 429 and a Retry-After header; and a
// status page of the guards a registry holds.
//
//	client := resiliencehttp.NewClient() // 30s per call, 10s per attempt, 3 attempts
//	resp, err := client.Get("https://api.example.com/users/42")
//
//	mux.Handle("/", resiliencehttp.Handler(app, resilience.NewBulkhead(64)))
//
// # Client
//
// A [Transport] wraps a base http.RoundTripper. From the outside in, a call
// goes through a timeout for the whole call ([WithTimeout]), a
// resilience.Retry ([WithRetry]), the guards shared by every host
// ([WithGuards]) and those of the request's host ([WithHostGuard]), and a
// timeout per attempt ([WithAttemptTimeout]).
//
// What is retried: only requests that are safe to send again
// ([Idempotent], net/http's rule: GET, HEAD, OPTIONS, TRACE, PUT, DELETE,
// or an Idempotency-Key header), never a bare POST unless [WithIdempotent]
// says so; and only outcomes worth repeating ([Retryable]: transport errors
// that can heal, and 408, 429, 502, 503, 504), unless [WithRetryable] says
// otherwise. A request net/http refuses to send (an unsupported URL scheme,
// an invalid header field) is sent once. A Retry-After header, in seconds or as an HTTP-date, is the
// retry's hint: the retry waits that long instead of its backoff, cut to
// resilience.WithMaxRetryAfter, and gives up at once, returning the last
// response, when the wait would end past the request's deadline.
//
// Bodies: a request body is sent again through its GetBody, or read into
// memory first when it has none ([WithBodyBuffer]). A response that is not
// returned is read up to [WithDrainLimit] and closed, so its connection
// serves the next request instead of a new one being opened.
//
// The response returned keeps its body readable after RoundTrip returns:
// both deadlines hold until the body is read to the end or closed, and the
// guards are told the outcome then, so a bulkhead counts requests whose
// bodies are still being read.
//
// # Server
//
// [Handler] puts guards in front of a handler: a refused request gets 503
// (or the status given with [RefusalStatus], such as 429 for a rate
// limiter) and a Retry-After header from the refusal's retry hint. A panic
// in the handler frees what the guards hold and goes on up to net/http.
// [PriorityFromHeader] gives each request the priority its header names,
// for a resilience.AdaptiveLimiter that sheds the lowest first; the
// client's [WithPriorityHeader] sends it.
//
// # Chaos
//
// [NewChaosTransport] on the client side and [ChaosHandler] or
// [ChaosMiddleware] on the server side inject a [Chaos]: a status, a
// latency, a dropped connection or a body cut short, into the requests the
// core package's chaos options choose. Put the chaos transport under a
// [Transport], so that its retry and guards meet the faults.
//
// # Status page
//
// [StatusHandler] serves the guards of a resilience.Registry as a page
// that refreshes itself, one row per guard with its state in words and
// colour, and as JSON for scripts. Mount it, as net/http/pprof, behind the
// service's admin authentication:
//
//	admin.Handle("/debug/resilience/", http.StripPrefix("/debug/resilience", resiliencehttp.StatusHandler(reg)))
//
// It is read-only unless [WithStatusActions] lets an operator isolate or
// reset a breaker, through POST forms guarded against cross-site requests.
//
// # Errors
//
// A timeout's error matches resilience.ErrTimeout and
// context.DeadlineExceeded. Retries that run out on a status return the last
// response, as net/http's Client does; with [WithStatusErrors] they return
// an error matching resilience.ErrRetriesExhausted that holds a
// *[StatusError] (method, URL, status). A guard's refusal keeps its own
// sentinel (resilience.ErrBreakerOpen, resilience.ErrBulkheadFull…) and
// matches resilience.ErrRefused, whatever the guard. An
// AdaptiveThrottler among the guards counts what the server accepted by
// [ThrottleOutcome]; its refusals (resilience.ErrThrottled) are not retried.
//
// # Testing
//
// [WithClock] takes the clock of package resilience (a *clock.Mock of
// github.com/benbjohnson/clock in tests), for the timeouts, the reading of
// Retry-After dates and the retry's waits.
package resiliencehttp
