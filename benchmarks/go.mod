module github.com/faf87a20/resilience/benchmarks

go 1.26.0

replace github.com/faf87a20/resilience => ../

require (
	github.com/avast/retry-go/v5 v5.1.1
	github.com/cenkalti/backoff/v7 v7.0.3
	github.com/eapache/go-resiliency v1.7.0
	github.com/faf87a20/resilience v0.0.0-00010101000000-000000000000
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/graph-gophers/dataloader/v7 v7.1.0
	github.com/sony/gobreaker/v2 v2.4.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	go.uber.org/ratelimit v0.3.1 // indirect
	golang.org/x/time v0.16.0 // indirect
)
