module github.com/faf87a20/resilience/peertests

go 1.26.0

replace github.com/faf87a20/resilience => ../

replace github.com/faf87a20/resilience/resilienceredis => ../resilienceredis

require github.com/faf87a20/resilience v0.1.0
