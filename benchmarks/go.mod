module github.com/faf87a20/resilience/benchmarks

go 1.25

replace github.com/faf87a20/resilience => ../

require (
	github.com/avast/retry-go/v5 v5.1.1
	github.com/cenkalti/backoff/v7 v7.0.3
	github.com/eapache/go-resiliency v1.7.0
	github.com/faf87a20/resilience v0.0.0-00010101000000-000000000000
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/graph-gophers/dataloader/v7 v7.1.0
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/sony/gobreaker/v2 v2.4.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
)
