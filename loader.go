package resilience

import (
	"context"
	"fmt"
)

// NotFoundError is the error of a key a [Loader]'s fetch gave no value for.
// It matches [ErrNotFound].
type NotFoundError[K comparable] struct {
	Key K
}

// Error names the missing key.
func (e *NotFoundError[K]) Error() string { return fmt.Sprintf("resilience: key %v not found", e.Key) }

// Is reports whether target is ErrNotFound.
func (e *NotFoundError[K]) Is(target error) bool { return target == ErrNotFound }

// Loader loads values by key in batches, as DataLoader does: fetch is
// called once per batch with the distinct keys of many callers' Loads.
// Nothing is cached. It is a [Batcher] underneath, with its options,
// guarantees and events (component "loader"). A Loader is safe for
// concurrent use; the zero Loader's Load panics.
type Loader[K comparable, V any] struct {
	b *Batcher[K, V]
}

// NewLoader returns a loader that fetches keys in batches with fetch. It
// panics if fetch is nil or an option is invalid.
func NewLoader[K comparable, V any](fetch func(ctx context.Context, keys []K) (map[K]V, error), opts ...BatchOption) *Loader[K, V] {
	if fetch == nil {
		panic("resilience: NewLoader: fetch is nil")
	}
	fn := func(ctx context.Context, keys []K) ([]V, error) {
		distinct := make([]K, 0, len(keys))
		seen := make(map[K]struct{}, len(keys))
		for _, k := range keys {
			if _, dup := seen[k]; !dup {
				seen[k] = struct{}{}
				distinct = append(distinct, k)
			}
		}
		values, err := fetch(ctx, distinct)
		if err != nil {
			return nil, err
		}
		out := make([]V, len(keys))
		var missing ItemErrors
		for i, k := range keys {
			v, ok := values[k]
			if !ok {
				if missing == nil {
					missing = ItemErrors{}
				}
				missing[i] = &NotFoundError[K]{Key: k}
				continue
			}
			out[i] = v
		}
		if missing != nil {
			return out, missing
		}
		return out, nil
	}
	return &Loader[K, V]{b: newBatcher("NewLoader", KindLoader, fn, opts)}
}

// Load returns the value for key, fetched in a batch with other callers'
// keys. It returns an error matching [ErrNotFound] when fetch had no value
// for key, fetch's error when the batch failed, [ErrBatcherClosed] after
// Close, or ctx's error.
func (l *Loader[K, V]) Load(ctx context.Context, key K) (V, error) {
	if l.b == nil {
		panic("resilience: Loader.Load: the zero Loader is not usable; use NewLoader")
	}
	return l.b.Do(ctx, key)
}

// Close stops the loader as [Batcher.Close] does. Closing a zero Loader
// does nothing.
func (l *Loader[K, V]) Close(ctx context.Context) error {
	if l.b == nil {
		return nil
	}
	return l.b.Close(ctx)
}
