package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
)

func init() {
	register(scenario{order: 50, name: "batch", title: "Batcher: 10 lookups become 3 calls (batches of up to 4, 20ms wait)", run: batchTour})
}

func batchTour(ctx context.Context, w io.Writer) error {
	var mu sync.Mutex
	var calls []string
	lookup := func(_ context.Context, ids []int) ([]string, error) {
		sorted := append([]int(nil), ids...)
		sort.Ints(sorted)
		mu.Lock()
		calls = append(calls, fmt.Sprint(sorted))
		mu.Unlock()
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = fmt.Sprintf("user-%d", id)
		}
		return out, nil
	}
	b := resilience.NewBatcher(lookup, logs, resilience.WithName("service"), resilience.WithBatchMaxSize(4), resilience.WithBatchMaxWait(20*time.Millisecond))

	results := make([]string, 10)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := b.Do(ctx, i+1)
			if err != nil {
				results[i] = err.Error()
				return
			}
			results[i] = v
		}()
		time.Sleep(time.Millisecond) // callers arrive one by one
	}
	wg.Wait()
	if err := b.Close(ctx); err != nil {
		return err
	}
	for i, c := range calls {
		fmt.Fprintf(w, "backend call %d: ids %s\n", i+1, c)
	}
	fmt.Fprintf(w, "each caller got its own answer: %s\n", strings.Join(results, " "))

	fmt.Fprintln(w, "-- a Loader: lookups by key, each distinct key fetched once a batch; user 4 does not exist")
	users := map[int]string{1: "ada", 2: "grace", 3: "edsger", 5: "barbara"}
	fetches := 0
	loader := resilience.NewLoader(func(_ context.Context, ids []int) (map[int]string, error) {
		fetches++
		found := make(map[int]string, len(ids))
		for _, id := range ids {
			if name, ok := users[id]; ok {
				found[id] = name
			}
		}
		return found, nil
	}, resilience.WithBatchMaxWait(10*time.Millisecond))
	keys := []int{1, 2, 2, 3, 4, 5}
	names := make([]string, len(keys))
	for i, id := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, err := loader.Load(ctx, id)
			switch {
			case errors.Is(err, resilience.ErrNotFound):
				names[i] = fmt.Sprintf("user %d: %v", id, err)
			case err != nil:
				names[i] = err.Error()
			default:
				names[i] = fmt.Sprintf("user %d: %s", id, name)
			}
		}()
	}
	wg.Wait()
	if err := loader.Close(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d keys, %d backend call\n", len(keys), fetches)
	for _, n := range names {
		fmt.Fprintln(w, n)
	}
	return nil
}
