package plan

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// each calls f(0), ..., f(n-1) on at most workers goroutines and returns
// when every call has returned. Calls must not depend on each other's
// order: they run concurrently. A panic in a call is raised again on the
// caller's goroutine, as it would be had the calls been made there; on
// more than one worker its value is a workerPanic, which carries the stack
// of the call that raised it (the caller's own stack would only show each).
func each(n, workers int, f func(i int)) {
	if workers > n {
		workers = n
	}
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var (
		mu      sync.Mutex
		next    int
		panicky any
		wg      sync.WaitGroup
	)
	take := func() (int, bool) {
		mu.Lock()
		defer mu.Unlock()
		if next >= n || panicky != nil {
			return 0, false
		}
		next++
		return next - 1, true
	}
	for range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					mu.Lock()
					if panicky == nil {
						panicky = workerPanic{Value: r, Stack: debug.Stack()}
					}
					mu.Unlock()
				}
			}()
			for {
				i, ok := take()
				if !ok {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
	if panicky != nil {
		panic(panicky)
	}
}

// workerPanic is a panic raised in one of each's calls on another
// goroutine: its value and the stack of the goroutine that raised it.
type workerPanic struct {
	Value any
	Stack []byte
}

func (p workerPanic) String() string {
	return fmt.Sprintf("%v\n\npanicked on a planner goroutine:\n%s", p.Value, p.Stack)
}
