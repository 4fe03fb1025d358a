package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupkit/cuckoo/guard"
)

// loadResult is what one run of the load generator measured.
type loadResult struct {
	requests   int
	took       time.Duration
	p50, p99   time.Duration
	mean       time.Duration
	unexpected int64 // answers other than "not found"
}

// absentID returns the i-th id that no user has: like the real ones, from
// a range the table does not use.
func absentID(dst []byte, i int) []byte { return fmt.Appendf(dst[:0], "u%09d", 500_000_000+i) }

// measure calls lookup(i, buf) for i in [0, n) from workers goroutines,
// timing each call; lookup reports whether the answer was "not found".
func measure(n, workers int, lookup func(i int, buf []byte) (notFound bool, err error)) (loadResult, error) {
	lat := make([]time.Duration, n)
	var next, unexpected atomic.Int64
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 64)
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				notFound, err := lookup(i, buf)
				lat[i] = time.Since(t)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				if !notFound {
					unexpected.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	r := loadResult{requests: n, took: time.Since(start), unexpected: unexpected.Load()}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	slices.Sort(lat)
	r.p50, r.p99, r.mean = lat[n/2], lat[n*99/100], sum/time.Duration(n)
	return r, nil
}

// askAbsent asks the service at base for n ids that no user has, over
// HTTP, from workers goroutines.
func askAbsent(client *http.Client, base string, n, workers int) (loadResult, error) {
	return measure(n, workers, func(i int, buf []byte) (bool, error) {
		resp, err := client.Get(base + "/users/" + string(absentID(buf, i)))
		if err != nil {
			return false, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusNotFound, nil
	})
}

// lookupAbsent looks up n ids that no user has in the service's process,
// without HTTP, from workers goroutines.
func lookupAbsent(ctx context.Context, sv *service, n, workers int) (loadResult, error) {
	return measure(n, workers, func(i int, buf []byte) (bool, error) {
		id := absentID(buf, i)
		var err error
		if sv.direct {
			_, err = sv.st.load(ctx, id)
		} else {
			_, err = sv.g.Get(ctx, id)
		}
		if errors.Is(err, guard.ErrNotFound) {
			return true, nil
		}
		return false, err
	})
}
