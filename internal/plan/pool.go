package plan

import "sync"

// each calls f(0), ..., f(n-1) on at most workers goroutines and returns
// when every call has returned. Calls must not depend on each other's
// order: they run concurrently. A panic in a call is raised again on the
// caller's goroutine, as it would be had the calls been made there.
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
						panicky = r
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
