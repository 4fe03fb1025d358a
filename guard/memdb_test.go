package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/guard"
)

// table is what the tests need of a database table of rows keyed by id:
// the memory table below, or PostgreSQL (postgres_test.go).
type table interface {
	// insert creates the row of key; it fails with errExists if there is
	// one.
	insert(ctx context.Context, key []byte) error
	// remove deletes the row of key; it fails with an error wrapping
	// guard.ErrNotFound if there is none.
	remove(ctx context.Context, key []byte) error
	// load reads the row of key, or fails with an error wrapping
	// guard.ErrNotFound.
	load(ctx context.Context, key []byte) (string, error)
	// exists reports whether the row of key is committed, bypassing
	// everything.
	exists(ctx context.Context, key []byte) (bool, error)
	// scan yields the key of every row.
	scan(ctx context.Context, yield func(key []byte) error) error
	// loads returns the number of calls of load so far.
	loads() int64
}

var (
	errExists   = errors.New("row exists")
	errInjected = errors.New("injected write failure")
)

// memTable is a table in memory whose writes can be made to fail before
// or after they commit, and to take time.
type memTable struct {
	mu   sync.Mutex
	rows map[string]string
	n    int64 // loads

	// Fault injection, read under mu: the probability that a write fails
	// without committing, and that it commits and then returns an error
	// (a lost reply).
	failBefore, failAfter float64
	// writeDelay is the longest a write sleeps before it commits.
	writeDelay time.Duration
	// liveScan makes scan walk the keys in order, locking for each one,
	// instead of reading one snapshot: rows inserted behind the walk are
	// missed and rows removed ahead of it are skipped, as with a scan by
	// key ranges in several transactions.
	liveScan bool
	rng      *rand.Rand
}

func newMemTable(seed uint64) *memTable {
	return &memTable{rows: map[string]string{}, rng: rand.New(rand.NewPCG(seed, 1))}
}

// fault decides, under mu, how a write ends.
func (m *memTable) fault() (before, after bool, delay time.Duration) {
	r := m.rng.Float64()
	before = r < m.failBefore
	after = !before && r < m.failBefore+m.failAfter
	if m.writeDelay > 0 {
		delay = time.Duration(m.rng.Int64N(int64(m.writeDelay)))
	}
	return
}

func (m *memTable) insert(_ context.Context, key []byte) error {
	m.mu.Lock()
	before, after, delay := m.fault()
	m.mu.Unlock()
	time.Sleep(delay)
	if before {
		return errInjected
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rows[string(key)]; ok {
		return errExists
	}
	m.rows[string(key)] = "row " + string(key)
	if after {
		return errInjected
	}
	return nil
}

func (m *memTable) remove(_ context.Context, key []byte) error {
	m.mu.Lock()
	before, after, delay := m.fault()
	m.mu.Unlock()
	time.Sleep(delay)
	if before {
		return errInjected
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.rows[string(key)]; !ok {
		return fmt.Errorf("remove %q: %w", key, guard.ErrNotFound)
	}
	delete(m.rows, string(key))
	if after {
		return errInjected
	}
	return nil
}

func (m *memTable) load(_ context.Context, key []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if v, ok := m.rows[string(key)]; ok {
		return v, nil
	}
	return "", fmt.Errorf("load %q: %w", key, guard.ErrNotFound)
}

func (m *memTable) exists(_ context.Context, key []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.rows[string(key)]
	return ok, nil
}

func (m *memTable) loads() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

func (m *memTable) scan(ctx context.Context, yield func(key []byte) error) error {
	m.mu.Lock()
	keys := make([]string, 0, len(m.rows))
	for k := range m.rows {
		keys = append(keys, k)
	}
	live := m.liveScan
	m.mu.Unlock()
	slices.Sort(keys)
	if !live {
		for _, k := range keys {
			if err := yield([]byte(k)); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	// A walk in key order: each step yields the least key after the last
	// one that exists now.
	last := ""
	first := true
	for {
		m.mu.Lock()
		next, ok := "", false
		for k := range m.rows {
			if (first || k > last) && (!ok || k < next) {
				next, ok = k, true
			}
		}
		m.mu.Unlock()
		if !ok {
			return ctx.Err()
		}
		if err := yield([]byte(next)); err != nil {
			return err
		}
		last, first = next, false
	}
}

// newGuard is guard.New for a test: its options are the test's own, so an
// error is the test's bug.
func newGuard[V any](tb testing.TB, set guard.Filter, load guard.Loader[V], opts ...guard.Option) *guard.Guard[V] {
	tb.Helper()
	g, err := guard.New(set, load, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}
