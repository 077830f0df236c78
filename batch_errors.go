package resilience

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ItemErrors is the error a batch function returns when some items of a
// batch failed: it maps an item's index in the batch to its error. The
// results must still hold one per item, for the others.
type ItemErrors map[int]error

// Error lists the failed items.
func (e ItemErrors) Error() string {
	idx := e.indexes()
	parts := make([]string, len(idx))
	for k, i := range idx {
		parts[k] = "item " + strconv.Itoa(i) + ": " + e[i].Error()
	}
	return "resilience: batch items failed: " + strings.Join(parts, "; ")
}

// Unwrap returns the items' errors in the order of their indexes, so that
// errors.Is and errors.As see each of them.
func (e ItemErrors) Unwrap() []error {
	idx := e.indexes()
	errs := make([]error, len(idx))
	for k, i := range idx {
		errs[k] = e[i]
	}
	return errs
}

func (e ItemErrors) indexes() []int {
	idx := make([]int, 0, len(e))
	for i := range e {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	return idx
}

// batchResultsError is the whole-batch error of a batch function that
// returned a number of results other than the number of items.
type batchResultsError struct{ items, results int }

func (e *batchResultsError) Error() string {
	return fmt.Sprintf("%v: %d items, %d results", ErrBatchResults, e.items, e.results)
}
func (e *batchResultsError) Is(target error) bool { return target == ErrBatchResults }
