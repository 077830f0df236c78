module github.com/faf87a20/resilience/benchmarks

go 1.26.0

replace github.com/faf87a20/resilience => ../

require (
	github.com/avast/retry-go/v5 v5.1.1
	github.com/cenkalti/backoff/v7 v7.0.3
	github.com/eapache/go-resiliency v1.7.0
	github.com/faf87a20/resilience v0.1.0
	github.com/faf87a20/resilience/resilienceotel v0.0.0-00010101000000-000000000000
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/graph-gophers/dataloader/v7 v7.1.0
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.4
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/redis/go-redis/v9 v9.23.0
	github.com/sony/gobreaker/v2 v2.4.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.uber.org/ratelimit v0.3.1
	golang.org/x/sync v0.23.0
	golang.org/x/time v0.16.0
	google.golang.org/grpc v1.85.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/faf87a20/resilience/resiliencegrpc v0.0.0
	github.com/faf87a20/resilience/resilienceredis v0.0.0
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/faf87a20/resilience/resilienceotel => ../resilienceotel

replace github.com/faf87a20/resilience/resiliencegrpc => ../resiliencegrpc

replace github.com/faf87a20/resilience/resilienceredis => ../resilienceredis
