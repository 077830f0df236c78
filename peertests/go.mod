module github.com/faf87a20/resilience/peertests

go 1.26.0

replace github.com/faf87a20/resilience => ../

replace github.com/faf87a20/resilience/resilienceredis => ../resilienceredis

require (
	github.com/faf87a20/resilience v0.1.0
	github.com/hashicorp/go-hclog v1.6.3
	k8s.io/apimachinery v0.37.2
	k8s.io/utils v0.0.0-20260626114624-be93311217bd
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	golang.org/x/sys v0.0.0-20220503163025-988cb79eb6c6 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
