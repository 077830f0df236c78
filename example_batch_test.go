package resilience_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
)

func ExampleNewBatcher() {
	// One call to the backend per batch of up to 50 names.
	upper := func(_ context.Context, names []string) ([]string, error) {
		fmt.Println("batch of", len(names))
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = strings.ToUpper(n)
		}
		return out, nil
	}
	b := resilience.NewBatcher(upper, resilience.WithBatchMaxSize(50), resilience.WithBatchMaxWait(20*time.Millisecond))
	defer b.Close(context.Background())

	var wg sync.WaitGroup
	results := make([]string, 3)
	for i, name := range []string{"ann", "bob", "eve"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = b.Do(context.Background(), name) // each caller gets its own
		}()
	}
	wg.Wait()
	fmt.Println(results)
	// Output:
	// batch of 3
	// [ANN BOB EVE]
}

// User is what the example loader loads.
type User struct {
	ID   int
	Name string
}

func ExampleNewLoader() {
	db := map[int]User{1: {1, "Ann"}, 2: {2, "Bob"}}
	users := resilience.NewLoader(func(_ context.Context, ids []int) (map[int]User, error) {
		sort.Ints(ids)
		fmt.Println("fetching", ids) // equal keys are fetched once
		found := map[int]User{}
		for _, id := range ids {
			if u, ok := db[id]; ok {
				found[id] = u
			}
		}
		return found, nil
	}, resilience.WithBatchMaxWait(20*time.Millisecond))
	defer users.Close(context.Background())

	var wg sync.WaitGroup
	out := make([]string, 4)
	for i, id := range []int{1, 2, 1, 3} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := users.Load(context.Background(), id)
			switch {
			case errors.Is(err, resilience.ErrNotFound):
				out[i] = fmt.Sprintf("%d: not found", id)
			default:
				out[i] = fmt.Sprintf("%d: %s", id, u.Name)
			}
		}()
	}
	wg.Wait()
	fmt.Println(strings.Join(out, ", "))
	// Output:
	// fetching [1 2 3]
	// 1: Ann, 2: Bob, 1: Ann, 3: not found
}

func ExampleItemErrors() {
	check := func(_ context.Context, ns []int) ([]string, error) {
		out := make([]string, len(ns))
		errs := resilience.ItemErrors{}
		for i, n := range ns {
			if n < 0 {
				errs[i] = errors.New("negative")
				continue
			}
			out[i] = "ok"
		}
		return out, errs // only the failed items get an error
	}
	b := resilience.NewBatcher(check, resilience.WithBatchMaxWait(0))
	defer b.Close(context.Background())
	v, err := b.Do(context.Background(), 5)
	fmt.Println(v, err)
	_, err = b.Do(context.Background(), -5)
	fmt.Println(err)
	// Output:
	// ok <nil>
	// negative
}

func ExampleWithBatchPolicy() {
	// A loader's fetch is guarded by a Policy[[]V]: the batch call's
	// result is the values in the keys' order, not fetch's map.
	fetches := 0
	users := resilience.NewLoader(func(_ context.Context, ids []int) (map[int]string, error) {
		fetches++
		if fetches == 1 {
			return nil, errors.New("connection reset") // the whole fetch failed: retried
		}
		return map[int]string{1: "Ann"}, nil // id 2 is missing: not retried
	}, resilience.WithBatchMaxWait(0), resilience.WithBatchPolicy(
		resilience.Retry[[]string](resilience.WithBackoff(resilience.Constant(0)))))
	defer users.Close(context.Background())

	name, err := users.Load(context.Background(), 1)
	fmt.Println(name, err, fetches)
	_, err = users.Load(context.Background(), 2)
	fmt.Println(errors.Is(err, resilience.ErrNotFound), fetches)
	// Output:
	// Ann <nil> 2
	// true 3
}
