package guard

import (
	"context"
	"errors"
	"sync"
)

// flights runs at most one load per key at a time and shares its result
// with the lookups of that key that arrive while it runs: a hot key
// missing from the cache costs the database one query, not one per
// request (the "thundering herd").
//
// A shared "not found" must not be older than the lookup it answers, or
// a lookup that begins after an Insert committed could be told "not
// found" by a load that read the database before the commit. So a lookup
// takes a row from any load that was running when it arrived (a row one
// load old errs on the safe side; an in-process Remove forgets the key's
// load, so a lookup after it starts a new one), but takes "not found"
// only from a load that began after it arrived: the lookups that arrived
// during a load that finds nothing share the next load. The database still sees
// at most one load of a key at a time. A load that ended because its
// caller's context ended is not shared either: the others start another.
type flights[V any] struct {
	mu      sync.Mutex
	started uint64 // loads started so far; a flight's seq is its rank
	m       map[string]*flight[V]
}

// flight is one call of load.
type flight[V any] struct {
	seq     uint64
	waiting int           // lookups waiting for it (under flights.mu; for tests)
	done    chan struct{} // closed when val and err are set
	val     V
	err     error
}

// errLoadPanicked is what the lookups sharing a load get when it panics
// (the panic goes on in the goroutine that called load).
var errLoadPanicked = errors.New("guard: load panicked")

// do returns the result of a call of load(ctx, key), its own or one it
// shares, and whether it shared another lookup's call.
func (fs *flights[V]) do(ctx context.Context, key []byte, load Loader[V]) (val V, err error, joined bool) {
	fs.mu.Lock()
	arrived := fs.started
	for {
		f := fs.m[string(key)]
		if f == nil {
			break
		}
		f.waiting++
		fs.mu.Unlock()
		var ended error
		select {
		case <-f.done:
		case <-ctx.Done():
			ended = ctx.Err()
		}
		fs.mu.Lock()
		f.waiting--
		if ended != nil {
			fs.mu.Unlock()
			var zero V
			return zero, ended, true
		}
		if f.usableAfter(arrived) {
			fs.mu.Unlock()
			return f.val, f.err, true
		}
	}
	fs.started++
	f := &flight[V]{seq: fs.started, done: make(chan struct{})}
	if fs.m == nil {
		fs.m = make(map[string]*flight[V])
	}
	k := string(key)
	fs.m[k] = f
	fs.mu.Unlock()

	finished := false
	defer func() {
		if !finished {
			f.err = errLoadPanicked
		}
		fs.mu.Lock()
		if fs.m[k] == f {
			delete(fs.m, k)
		}
		fs.mu.Unlock()
		close(f.done)
	}()
	f.val, f.err = load(ctx, key)
	finished = true
	return f.val, f.err, false
}

// usableAfter reports whether a lookup that arrived when arrived loads
// had started may take f's result.
func (f *flight[V]) usableAfter(arrived uint64) bool {
	switch {
	case f.err == nil:
		return true
	case errors.Is(f.err, ErrNotFound):
		return f.seq > arrived
	case errors.Is(f.err, context.Canceled), errors.Is(f.err, context.DeadlineExceeded):
		return false
	}
	return true
}

// forget makes the next lookup of key start a load of its own instead of
// sharing one already running: Insert and Remove call it after their
// write, so that a lookup that begins after they return reads the
// database after the write.
func (fs *flights[V]) forget(key []byte) {
	fs.mu.Lock()
	delete(fs.m, string(key))
	fs.mu.Unlock()
}
