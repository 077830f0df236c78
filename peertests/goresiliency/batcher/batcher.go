// Package batcher offers the API of github.com/eapache/go-resiliency/batcher
// on top of resilience.Batcher, so that that library's own tests check
// ours. It is written for this module's tests, not for use.
package batcher

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/faf87a20/resilience"
)

// Batcher is a resilience.Batcher whose batches gather every call made
// within the timeout of the batch's first, without bound on their size or
// number.
type Batcher struct {
	timeout   time.Duration
	doWork    func([]interface{}) error
	prefilter func(interface{}) error

	once sync.Once
	b    *resilience.Batcher[interface{}, struct{}]
}

// New returns a batcher that calls doWork once for the calls of Run made
// within timeout of each other's first.
func New(timeout time.Duration, doWork func([]interface{}) error) *Batcher {
	return &Batcher{timeout: timeout, doWork: doWork}
}

// Prefilter sets a check that rejects a parameter before it joins a batch
// (resilience.WithBatchPrefilter). It must be set before the first Run.
func (b *Batcher) Prefilter(filter func(interface{}) error) { b.prefilter = filter }

func (b *Batcher) batcher() *resilience.Batcher[interface{}, struct{}] {
	b.once.Do(func() {
		opts := []resilience.BatchOption{
			resilience.WithBatchMaxWait(b.timeout),
			resilience.WithBatchMaxSize(math.MaxInt32),
			resilience.WithBatchMaxConcurrent(math.MaxInt32),
		}
		if b.prefilter != nil {
			opts = append(opts, resilience.WithBatchPrefilter(b.prefilter))
		}
		b.b = resilience.NewBatcher(func(_ context.Context, params []interface{}) ([]struct{}, error) {
			if err := b.doWork(params); err != nil {
				return nil, err
			}
			return make([]struct{}, len(params)), nil
		}, opts...)
	})
	return b.b
}

// Run adds param to a batch and returns the batch's error.
func (b *Batcher) Run(param interface{}) error {
	_, err := b.batcher().Do(context.Background(), param)
	return err
}

// Shutdown sends the pending batch; with wait, it also waits until every
// batch has been answered.
func (b *Batcher) Shutdown(wait bool) {
	bb := b.batcher()
	if wait {
		_ = bb.Close(context.Background())
		return
	}
	go func() { _ = bb.Close(context.Background()) }()
}
