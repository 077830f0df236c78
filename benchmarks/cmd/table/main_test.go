package main

import (
	"bytes"
	"strings"
	"testing"
)

const sampleOutput = `goos: linux
BenchmarkBatchPerItem/resilience-2   	100	 210 ns/op	 2 B/op	 0 allocs/op
BenchmarkRetrySuccess/resilience-2   	100	 5.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/resilience-2   	100	 7.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/resilience-2   	100	 6.0 ns/op	 0 B/op	 0 allocs/op
BenchmarkRetrySuccess/failsafe-go-2  	100	 500 ns/op	 416 B/op	 14 allocs/op
BenchmarkRetrySuccess/retry-go-2     	100	 5.5 ns/op	 0 B/op	 0 allocs/op
BenchmarkTimeout/context.WithTimeout-2	100	 400 ns/op	 272 B/op	 4 allocs/op
BenchmarkTimeout/resilience-2        	100	 1000 ns/op	 448 B/op	 6 allocs/op
BenchmarkTimeout/resilience-cooperative-2	100	 420 ns/op	 272 B/op	 4 allocs/op
BenchmarkHTTPSuccess/net-http-2      	100	 30000 ns/op	 5050 B/op	 61 allocs/op
BenchmarkHTTPSuccess/resilience-2    	100	 33000 ns/op	 6940 B/op	 79 allocs/op
BenchmarkHTTPSuccess/failsafe-go-2   	100	 34000 ns/op	 5770 B/op	 80 allocs/op
PASS
`

func TestTable(t *testing.T) {
	rows, err := parse(strings.NewReader(sampleOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || len(rows[0].results) != 3 || rows[2].name != "BatchPerItem" || rows[3].name != "HTTPSuccess" {
		t.Fatalf("parse() = %+v, want 4 rows in the table's order, the first with 3 libraries", rows)
	}
	if got := rows[0].results[0].ns; got != 6 {
		t.Errorf("median of 5, 7, 6 = %v, want 6", got)
	}
	var out bytes.Buffer
	write(&out, rows)
	for _, want := range []string{
		"| RetrySuccess | 6.00 | 0 | retry-go | 5.50 | 0.92× | ≤ 15 ns, 0 allocs, ≥ 10× failsafe-go: met |",
		"| Timeout | 1000 | 6 | ",
		"default ≤ 1.8× context.WithTimeout: **missed**",
		"| Timeout (cooperative) | 420 | 4 |",
		"cooperative ≤ 1.15× context.WithTimeout: met",
		"| RetrySuccess | failsafe-go | 500 | 416 | 14 |",
		"| BatchPerItem | 210 | 0 | – | – | – | ≤ 300 ns, ≤ 2 allocs per item: met |",
		"| HTTPSuccess | 33000 | 79 | failsafe-go | 34000 | 1.03× |  |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
