package plan

import (
	"strings"
	"sync/atomic"
	"testing"
)

// each calls f once for every index, whatever the number of workers.
func TestEachCallsEveryIndexOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 7, 100} {
		for _, n := range []int{0, 1, 5, 64} {
			calls := make([]atomic.Int32, n)
			each(n, workers, func(i int) { calls[i].Add(1) })
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Errorf("%d workers, %d calls: index %d called %d times", workers, n, i, c)
				}
			}
		}
	}
}

// A panic in a call reaches each's caller, as it would had the calls been
// made on the caller's goroutine.
func TestEachRaisesAPanicOnTheCaller(t *testing.T) {
	for _, workers := range []int{1, 4} {
		func() {
			defer func() {
				r := recover()
				if wp, ok := r.(workerPanic); ok {
					if !strings.Contains(string(wp.Stack), "TestEachRaisesAPanicOnTheCaller") {
						t.Errorf("%d workers: the stack does not show the call that panicked:\n%s", workers, wp.Stack)
					}
					r = wp.Value
				}
				if r != "index 3" {
					t.Errorf("%d workers: recovered %v, want the call's panic", workers, r)
				}
			}()
			each(1000, workers, func(i int) {
				if i == 3 {
					panic("index 3")
				}
			})
			t.Errorf("%d workers: each returned after a call panicked", workers)
		}()
	}
}
