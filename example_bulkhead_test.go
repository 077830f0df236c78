package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faf87a20/resilience"
)

func ExampleNewBulkhead() {
	// At most two calls at once; a third is refused at once.
	bulkhead := resilience.NewBulkhead(2)
	policy := resilience.Guarded[string](bulkhead)

	release := make(chan struct{})
	started := make(chan struct{}, 2)
	for range 2 {
		go resilience.Do(context.Background(), policy, func(context.Context) (string, error) {
			started <- struct{}{}
			<-release
			return "done", nil
		})
	}
	<-started
	<-started

	_, err := resilience.Do(context.Background(), policy, func(context.Context) (string, error) {
		return "never runs", nil
	})
	fmt.Println(errors.Is(err, resilience.ErrBulkheadFull), bulkhead.InFlight())
	close(release)
	// Output: true 2
}

func ExampleWithBulkheadWait() {
	// One slot; a caller may wait up to a second for it.
	bulkhead := resilience.NewBulkhead(1, resilience.WithBulkheadWait(time.Second))

	if err := bulkhead.Acquire(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		bulkhead.Release()
	}()
	err := bulkhead.Acquire(context.Background()) // waits for the release
	fmt.Println(err, bulkhead.InFlight())
	bulkhead.Release()
	// Output: <nil> 1
}
