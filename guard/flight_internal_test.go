package guard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedLoad is a Loader whose calls block until released, each then
// answering what answer says.
type gatedLoad struct {
	calls   atomic.Int64
	entered chan int64 // receives each call's number as it starts
	gate    chan struct{}
	answer  func(ctx context.Context, n int64) (string, error)
}

func newGatedLoad(answer func(ctx context.Context, n int64) (string, error)) *gatedLoad {
	return &gatedLoad{entered: make(chan int64, 100), gate: make(chan struct{}), answer: answer}
}

func (l *gatedLoad) load(ctx context.Context, key []byte) (string, error) {
	n := l.calls.Add(1)
	l.entered <- n
	select {
	case <-l.gate:
	case <-ctx.Done():
	}
	return l.answer(ctx, n)
}

// waitFor waits until want lookups wait for the load of key running now.
// It polls until a deadline far beyond need (2 minutes, a bound for a
// broken flight, not a timing assumption): 10,000 polls 100 µs apart, as
// before, gave the goroutines about a second to start and wait, which a
// loaded machine can take.
func waitFor[V any](t *testing.T, fs *flights[V], key string, want int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		fs.mu.Lock()
		n := -1
		if f := fs.m[key]; f != nil {
			n = f.waiting
		}
		fs.mu.Unlock()
		if n == want {
			return
		}
	}
	t.Fatalf("%d lookups never waited", want)
}

type result struct {
	val    string
	err    error
	joined bool
}

func startDo(fs *flights[string], ctx context.Context, key string, l *gatedLoad) chan result {
	c := make(chan result, 1)
	go func() {
		v, err, j := fs.do(ctx, []byte(key), l.load)
		c <- result{v, err, j}
	}()
	return c
}

func TestFlightsShareARow(t *testing.T) {
	var fs flights[string]
	l := newGatedLoad(func(context.Context, int64) (string, error) { return "row", nil })
	lead := startDo(&fs, context.Background(), "k", l)
	<-l.entered
	var followers []chan result
	for range 5 {
		followers = append(followers, startDo(&fs, context.Background(), "k", l))
	}
	waitFor(t, &fs, "k", 5)
	close(l.gate)
	if r := <-lead; r.val != "row" || r.err != nil || r.joined {
		t.Fatalf("leader: %+v", r)
	}
	for _, c := range followers {
		if r := <-c; r.val != "row" || r.err != nil || !r.joined {
			t.Fatalf("follower: %+v", r)
		}
	}
	if n := l.calls.Load(); n != 1 {
		t.Fatalf("%d loads for 6 concurrent lookups of one key, want 1", n)
	}
}

// TestFlightsNotFoundIsNotOlderThanTheLookup: a "not found" read before
// a follower arrived may be out of date (the row may have committed
// since), so the followers share one new load instead.
func TestFlightsNotFoundIsNotOlderThanTheLookup(t *testing.T) {
	var fs flights[string]
	l := newGatedLoad(func(_ context.Context, n int64) (string, error) {
		if n == 1 {
			return "", fmt.Errorf("first: %w", ErrNotFound)
		}
		return "row", nil
	})
	lead := startDo(&fs, context.Background(), "k", l)
	<-l.entered
	var followers []chan result
	for range 4 {
		followers = append(followers, startDo(&fs, context.Background(), "k", l))
	}
	waitFor(t, &fs, "k", 4)
	l.gate <- struct{}{} // release the first load only
	if r := <-lead; !errors.Is(r.err, ErrNotFound) {
		t.Fatalf("leader: %+v", r)
	}
	<-l.entered // the second load, which the followers share
	waitFor(t, &fs, "k", 3)
	close(l.gate)
	for _, c := range followers {
		if r := <-c; r.val != "row" || r.err != nil {
			t.Fatalf("follower took %+v, want the second load's row", r)
		}
	}
	if n := l.calls.Load(); n != 2 {
		t.Fatalf("%d loads, want 2", n)
	}
}

func TestFlightsLeaderCanceled(t *testing.T) {
	var fs flights[string]
	l := newGatedLoad(func(ctx context.Context, n int64) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "row", nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	lead := startDo(&fs, ctx, "k", l)
	<-l.entered
	follower := startDo(&fs, context.Background(), "k", l)
	waitFor(t, &fs, "k", 1)
	cancel()
	if r := <-lead; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("leader: %+v", r)
	}
	<-l.entered
	close(l.gate)
	if r := <-follower; r.val != "row" || r.err != nil {
		t.Fatalf("follower of a canceled leader: %+v, want a load of its own", r)
	}
}

func TestFlightsFollowerCanceled(t *testing.T) {
	var fs flights[string]
	l := newGatedLoad(func(context.Context, int64) (string, error) { return "row", nil })
	lead := startDo(&fs, context.Background(), "k", l)
	<-l.entered
	ctx, cancel := context.WithCancel(context.Background())
	follower := startDo(&fs, ctx, "k", l)
	waitFor(t, &fs, "k", 1)
	cancel()
	if r := <-follower; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("canceled follower: %+v", r)
	}
	close(l.gate)
	if r := <-lead; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestFlightsPanic(t *testing.T) {
	var fs flights[string]
	l := newGatedLoad(func(context.Context, int64) (string, error) { panic("boom") })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if recover() == nil {
				t.Error("the leader's panic did not go on")
			}
		}()
		fs.do(context.Background(), []byte("k"), l.load)
	}()
	<-l.entered
	follower := startDo(&fs, context.Background(), "k", l)
	waitFor(t, &fs, "k", 1)
	close(l.gate)
	wg.Wait()
	if r := <-follower; !errors.Is(r.err, errLoadPanicked) {
		t.Fatalf("follower of a panicking load: %+v", r)
	}
	if len(fs.m) != 0 {
		t.Fatal("the panicked load is still registered")
	}
}

func TestFlightsForget(t *testing.T) {
	var fs flights[string]
	l := newGatedLoad(func(_ context.Context, n int64) (string, error) { return fmt.Sprint(n), nil })
	first := startDo(&fs, context.Background(), "k", l)
	<-l.entered
	fs.forget([]byte("k"))
	second := startDo(&fs, context.Background(), "k", l)
	<-l.entered // a load of its own, not shared with the forgotten one
	close(l.gate)
	if r1, r2 := <-first, <-second; r1.joined || r2.joined || r1.val == r2.val {
		t.Fatalf("after forget: %+v and %+v, want two loads", r1, r2)
	}
}

// TestGuardSharesLoads: concurrent Gets of one key through a guard call
// load once, and the Stats say so.
func TestGuardSharesLoads(t *testing.T) {
	l := newGatedLoad(func(context.Context, int64) (string, error) { return "row", nil })
	g, err := New[string](nil, l.load)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, err := g.Get(context.Background(), []byte("hot")); v != "row" || err != nil {
				t.Errorf("Get: %q, %v", v, err)
			}
		}()
	}
	<-l.entered
	waitFor(t, &g.flights, "hot", 9)
	close(l.gate)
	wg.Wait()
	if s := g.Stats(); s.Loads != 1 || s.Joined != 9 || s.Lookups != 10 {
		t.Fatalf("stats %+v, want 1 load and 9 joined", s)
	}
}
