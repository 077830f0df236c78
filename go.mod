module github.com/faf87a20/resilience

go 1.25

require (
	github.com/benbjohnson/clock v1.3.5
	go.uber.org/goleak v1.3.0
)

require github.com/stretchr/testify v1.11.1 // indirect
