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
	notFound   int
	took       time.Duration
	p50, p99   time.Duration
	mean       time.Duration
	unexpected int64 // answers other than 404
}

// askAbsent asks base for n ids that no user has, from workers
// goroutines, and measures each request's latency.
func askAbsent(ctx context.Context, client *http.Client, base string, n, workers int) (loadResult, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var unexpected atomic.Int64
	var firstErr error
	var errOnce sync.Once
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				// Ids like the real ones, from a range no user has.
				url := fmt.Sprintf("%s/users/u%09d", base, 500_000_000+i)
				t := time.Now()
				resp, err := client.Get(url)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat[i] = time.Since(t)
				if resp.StatusCode != http.StatusNotFound {
					unexpected.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	return summarize(lat, time.Since(start), unexpected.Load()), nil
}

// lookupAbsent looks up n absent ids in the service's process, without
// HTTP, from workers goroutines, and measures each lookup.
func lookupAbsent(ctx context.Context, sv *service, n, workers int) (loadResult, error) {
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
			var id []byte
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				id = fmt.Appendf(id[:0], "u%09d", 500_000_000+i)
				t := time.Now()
				var err error
				if sv.direct {
					_, err = sv.st.load(ctx, id)
				} else {
					_, err = sv.g.Get(ctx, id)
				}
				lat[i] = time.Since(t)
				if !errors.Is(err, guard.ErrNotFound) {
					if err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
					unexpected.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return loadResult{}, firstErr
	}
	return summarize(lat, time.Since(start), unexpected.Load()), nil
}

// summarize returns the figures of the latencies lat of a run that took
// took.
func summarize(lat []time.Duration, took time.Duration, unexpected int64) loadResult {
	n := len(lat)
	r := loadResult{requests: n, took: took, unexpected: unexpected, notFound: n - int(unexpected)}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	slices.Sort(lat)
	r.p50, r.p99, r.mean = lat[n/2], lat[n*99/100], sum/time.Duration(n)
	return r
}
