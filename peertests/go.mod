module github.com/faf87a20/resilience/peertests

go 1.26.0

replace github.com/faf87a20/resilience => ../

replace github.com/faf87a20/resilience/resilienceredis => ../resilienceredis

require (
	github.com/faf87a20/resilience v0.1.0
	github.com/faf87a20/resilience/resilienceredis v0.0.0
	github.com/hashicorp/go-hclog v1.6.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/stretchr/testify v1.12.1
	k8s.io/apimachinery v0.37.2
	k8s.io/utils v0.0.0-20260626114624-be93311217bd
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
