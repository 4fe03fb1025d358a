package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/store"
)

// model is the Go map a Store is checked against, with the order Range
// must give: keys in the order first put (a key deleted and put again
// goes to the end).
type model struct {
	vals  map[string][]byte
	order []string // may hold deleted keys; live ones in first-put order
	gen   map[string]int
	at    []int // gen of each order entry
}

func newModel() *model { return &model{vals: map[string][]byte{}, gen: map[string]int{}} }

func (m *model) put(k string, v []byte) {
	if _, ok := m.vals[k]; !ok {
		m.gen[k]++
		m.order = append(m.order, k)
		m.at = append(m.at, m.gen[k])
	}
	m.vals[k] = v
}

func (m *model) del(k string) bool {
	_, ok := m.vals[k]
	delete(m.vals, k)
	return ok
}

func (m *model) ranged() []string {
	var out []string
	for i, k := range m.order {
		if _, ok := m.vals[k]; ok && m.at[i] == m.gen[k] {
			out = append(out, k)
		}
	}
	return out
}

// randKey draws a key from a small space, so keys repeat: lengths 0 to a
// few KiB, with near-misses (keys that differ in one byte or one length).
func randKey(rng *rand.Rand) string {
	n := rng.IntN(64)
	switch rng.IntN(8) {
	case 0:
		return ""
	case 1:
		return string(bytes.Repeat([]byte{'k'}, rng.IntN(3000)))
	case 2:
		return fmt.Sprintf("%d", n) + string(bytes.Repeat([]byte{0}, rng.IntN(3)))
	}
	return fmt.Sprintf("key-%d", n)
}

func randValue(rng *rand.Rand) []byte {
	v := make([]byte, rng.IntN(200))
	if rng.IntN(20) == 0 {
		v = make([]byte, rng.IntN(40000))
	}
	for i := range v {
		v[i] = byte(rng.Uint32())
	}
	return v
}

// TestModel runs random operations on a Store and a map, with Close and
// reopen and Compact at random points, on both file systems: 6000 steps
// on the MemFS (2000 with -short), and on the operating system's, whose
// fsyncs (thousands: every Compact, Close and sealed log file) make a step
// cost milliseconds, 1500 (6000 with CUCKOO_LONG=1).
func TestModel(t *testing.T) {
	t.Parallel()
	for _, fsName := range []string{"mem", "os"} {
		t.Run("fs="+fsName, func(t *testing.T) {
			t.Parallel()
			rng := testseed.Rand(t)
			dir := t.TempDir()
			opts := []store.Option{store.WithLogFileSize(64 << 10), store.WithAutoCompact(0.5, 32<<10),
				store.WithSync(store.SyncNever), store.WithBufferSize(4 << 10)}
			if fsName == "mem" {
				opts = append(opts, store.WithFS(store.NewMemFS()))
			}
			s, err := store.Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			m := newModel()
			compactions := uint64(0)
			steps := 6000
			switch {
			case fsName == "os" && !testlong.Enabled():
				steps = 1500
			case testing.Short():
				steps = 2000
			}
			for step := range steps {
				k := randKey(rng)
				switch r := rng.IntN(100); {
				case r < 35:
					v := randValue(rng)
					if err := s.Put([]byte(k), v); err != nil {
						t.Fatalf("step %d: put: %v", step, err)
					}
					m.put(k, v)
				case r < 45:
					v := randValue(rng)
					stored, err := s.PutIfAbsent([]byte(k), v)
					_, had := m.vals[k]
					if err != nil || stored == had {
						t.Fatalf("step %d: PutIfAbsent(%.20q) = %v, %v; model had it: %v", step, k, stored, err, had)
					}
					if stored {
						m.put(k, v)
					}
				case r < 60:
					del, err := s.Delete([]byte(k))
					if want := m.del(k); err != nil || del != want {
						t.Fatalf("step %d: Delete(%.20q) = %v, %v; want %v", step, k, del, err, want)
					}
				case r < 90:
					v, err := s.Get([]byte(k))
					want, ok := m.vals[k]
					if !ok && !errors.Is(err, store.ErrNotFound) || ok && (err != nil || !bytes.Equal(v, want)) {
						t.Fatalf("step %d: Get(%.20q) = %d bytes, %v; model has it: %v", step, k, len(v), err, ok)
					}
					has, err := s.Has([]byte(k))
					if err != nil || has != ok {
						t.Fatalf("step %d: Has(%.20q) = %v, %v", step, k, has, err)
					}
				case r < 93:
					checkRange(t, s, m)
				case r < 96:
					if err := s.Compact(); err != nil {
						t.Fatalf("step %d: compact: %v", step, err)
					}
				default:
					compactions += s.Stats().Compactions
					if err := s.Close(); err != nil {
						t.Fatalf("step %d: close: %v", step, err)
					}
					if s, err = store.Open(dir, opts...); err != nil {
						t.Fatalf("step %d: reopen: %v", step, err)
					}
				}
				if s.Len() != uint64(len(m.vals)) {
					t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(m.vals))
				}
			}
			checkRange(t, s, m)
			if err := s.CheckIndex(); err != nil {
				t.Fatal(err)
			}
			st := s.Stats()
			t.Logf("%+v", st)
			if compactions+st.Compactions == 0 {
				t.Error("no compaction ran")
			}
		})
	}
}

func checkRange(t *testing.T, s *store.Store, m *model) {
	t.Helper()
	var got []string
	err := s.Range(func(k, v []byte) bool {
		if !bytes.Equal(v, m.vals[string(k)]) {
			t.Fatalf("Range: key %.20q has %d bytes, model %d", k, len(v), len(m.vals[string(k)]))
		}
		got = append(got, string(k))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := m.ranged(); !slices.Equal(got, want) {
		t.Fatalf("Range order:\n got %.300q\nwant %.300q", got, want)
	}
}
