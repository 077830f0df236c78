package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 40, name: "bulkhead", title: "Bulkhead: at most 2 calls at once", run: bulkheadTour})
}

func bulkheadTour(ctx context.Context, w io.Writer) error {
	svc := newService(ok(100 * time.Millisecond))

	for _, setup := range []struct {
		about string
		bh    *resilience.Bulkhead
	}{
		{"no waiting: the overflow is refused at once", resilience.NewBulkhead(2, logs, resilience.WithName("service"))},
		{"waiting up to 250ms: the overflow queues and is served in turn", resilience.NewBulkhead(2, logs, resilience.WithName("service"), resilience.WithBulkheadWait(250*time.Millisecond))},
	} {
		fmt.Fprintf(w, "-- %s\n", setup.about)
		policy := resilience.Guarded[string](setup.bh)
		results := make([]string, 5)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				arrived := since(start)
				_, err := resilience.Do(ctx, policy, svc.Call)
				switch {
				case err == nil:
					results[i] = fmt.Sprintf("caller %d: arrived at %s, served, done at %s", i+1, arrived, since(start))
				case errors.Is(err, resilience.ErrBulkheadFull):
					results[i] = fmt.Sprintf("caller %d: arrived at %s, refused at %s: %v", i+1, arrived, since(start), err)
				default:
					results[i] = fmt.Sprintf("caller %d: %v", i+1, err)
				}
			}()
			time.Sleep(10 * time.Millisecond) // callers arrive in order
		}
		wg.Wait()
		for _, r := range results {
			fmt.Fprintln(w, r)
		}
	}
	return nil
}
