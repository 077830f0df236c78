package resilience

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// BatchOption configures [NewBatcher] and [NewLoader]; an [Option] is one
// too.
type BatchOption interface {
	applyBatch(*batchConfig)
}

type batchConfig struct {
	maxSize       int
	maxWait       time.Duration
	maxConcurrent int
	maxQueued     int // -1: MaxConcurrent
	prefilter     any // func(In) error, checked by the constructor
	policy        any // Policy[[]Out], checked by the constructor
	common
}

// defaultBatchConfig holds the defaults the options' docs give.
func defaultBatchConfig() batchConfig {
	return batchConfig{maxSize: 100, maxWait: time.Millisecond, maxConcurrent: 8, maxQueued: -1}
}

type batchOptionFunc func(*batchConfig)

func (f batchOptionFunc) applyBatch(c *batchConfig) { f(c) }

func (o Option) applyBatch(c *batchConfig) { o.set(&c.common) }

// WithBatchMaxSize sets the most items a batch holds; a full batch is sent
// at once. The default is 100. It panics if n < 1.
func WithBatchMaxSize(n int) BatchOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBatchMaxSize: size must be at least 1, got %d", n))
	}
	return batchOptionFunc(func(c *batchConfig) { c.maxSize = n })
}

// WithBatchMaxWait sets how long a batch's first item waits for others
// before the batch is sent. The default is 1ms; with 0, items gather only
// while every batch slot is busy. It panics if d is negative.
func WithBatchMaxWait(d time.Duration) BatchOption {
	checkDuration("WithBatchMaxWait", "wait", d)
	return batchOptionFunc(func(c *batchConfig) { c.maxWait = d })
}

// WithBatchMaxConcurrent sets how many batches may run at once. The default
// is 8. It panics if n < 1.
func WithBatchMaxConcurrent(n int) BatchOption {
	if n < 1 {
		panic(fmt.Sprintf("resilience: WithBatchMaxConcurrent: batches must be at least 1, got %d", n))
	}
	return batchOptionFunc(func(c *batchConfig) { c.maxConcurrent = n })
}

// WithBatchMaxQueued sets how many full batches may wait for a batch slot
// besides the batch being filled; callers beyond that wait for room. The
// default is [WithBatchMaxConcurrent]'s value. It panics if n is negative.
func WithBatchMaxQueued(n int) BatchOption {
	if n < 0 {
		panic(fmt.Sprintf("resilience: WithBatchMaxQueued: queue must not be negative, got %d", n))
	}
	return batchOptionFunc(func(c *batchConfig) { c.maxQueued = n })
}

// WithBatchPrefilter rejects items before they join a batch: when f returns
// an error, Do returns it at once. It panics if f is nil, and the
// constructor if In is not the item type (K for a [Loader]).
func WithBatchPrefilter[In any](f func(item In) error) BatchOption {
	if f == nil {
		panic("resilience: WithBatchPrefilter: filter is nil")
	}
	return batchOptionFunc(func(c *batchConfig) { c.prefilter = f })
}

// WithBatchPolicy runs every batch call under p, a Policy[[]Out] for a
// Batcher[In, Out] and a Policy[[]V] for a Loader[K, V]. Only a
// whole-batch error is a failure of the batch call: items that fail one by
// one ([ItemErrors], a key not found) are not retried nor counted by a
// breaker. It panics if p is nil, and the constructor if p's type is wrong.
func WithBatchPolicy[T any](p Policy[T]) BatchOption {
	if isNil(p) {
		panic("resilience: WithBatchPolicy: policy is " + nilName(p))
	}
	return batchOptionFunc(func(c *batchConfig) { c.policy = p })
}

// batchFuncs checks the options that depend on the item and result types,
// for the constructor fn (NewBatcher or NewLoader), and returns them typed.
func batchFuncs[In, Out any](fn string, cfg *batchConfig) (prefilter func(In) error, policy Policy[[]Out]) {
	kind := func() string { // "Batcher[int, string]", "Loader[string, User]"
		return fmt.Sprintf("%s[%v, %v]", strings.TrimPrefix(fn, "New"), reflect.TypeFor[In](), reflect.TypeFor[Out]())
	}
	if cfg.prefilter != nil {
		f, ok := cfg.prefilter.(func(In) error)
		if !ok {
			panic(fmt.Sprintf("resilience: %s: WithBatchPrefilter: filter is a %T, but a %s takes a func(%v) error", fn, cfg.prefilter, kind(), reflect.TypeFor[In]()))
		}
		prefilter = f
	}
	if cfg.policy != nil {
		p, ok := cfg.policy.(Policy[[]Out])
		if !ok {
			panic(fmt.Sprintf("resilience: %s: WithBatchPolicy: policy is a %T, but a %s takes a resilience.Policy[%v]", fn, cfg.policy, kind(), reflect.TypeFor[[]Out]()))
		}
		policy = p
	}
	return prefilter, policy
}
