module github.com/faf87a20/resilience/realserver

go 1.25

require (
	github.com/faf87a20/resilience v0.0.0
	github.com/failsafe-go/failsafe-go v0.9.8
	go.uber.org/goleak v1.3.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
)

replace github.com/faf87a20/resilience => ../
