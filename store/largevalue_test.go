package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/store"
)

// rssFile returns the process's resident pages of mapped files
// (RssFile in /proc/self/status), in bytes, where the system tells it.
func rssFile(t *testing.T) (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "RssFile:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10, true
		}
	}
	return 0, false
}

// allocated returns about how many bytes the Go heap allocated while fn
// ran (runtime/metrics: small objects are counted as their spans fill,
// large ones at once).
func allocated(fn func()) uint64 {
	m := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(m)
	from := m[0].Value.Uint64()
	fn()
	metrics.Read(m)
	return m[0].Value.Uint64() - from
}

// TestLargeValuesInPlace: a Put or PutIfAbsent of a large value writes it
// to the log without a copy in memory, and ValueEquals compares a stored
// value with a given one in place, reading it from the log in pieces: on
// the real file system (a mapped log) and in memory, each allocates far
// less than the value (16 MiB; a write to the in-memory file system
// allocates the file's bytes) while it answers what Get and a
// comparison would: equal, or not (one byte differing at its start,
// middle or end, one byte more or less), ErrNotFound for an absent key,
// ErrCorrupt for a damaged record. Where Linux tells it (RssFile),
// PutIfAbsent of a present key, Has and ValueEquals, on a log mapped
// anew, bring less than a quarter of a value's pages into the process.
// The previous version had no ValueEquals (dedup --exact-dir compared a
// copy Get made), a Put of a large value copied it into the record it
// wrote, and a lookup checked a record's checksum through the mapping.
func TestLargeValuesInPlace(t *testing.T) {
	for _, real := range []bool{true, false} {
		t.Run(fmt.Sprintf("os=%v", real), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "db")
			opts := []store.Option{store.WithSync(store.SyncNever)}
			var fs *store.MemFS
			if !real {
				fs = store.NewMemFS()
				dir = "db"
				opts = append(opts, store.WithFS(fs))
			}
			s, err := store.Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			const n = 16 << 20
			v := bytes.Repeat([]byte("0123456789abcdef"), n/16)
			// The MemFS holds its files in memory: only the real file
			// system's writes allocate nothing of the value's size.
			limit := uint64(n / 8)
			if !real {
				limit = 1 << 40
			}
			var stored bool
			if a := allocated(func() { stored, err = s.PutIfAbsent([]byte("big"), v) }); err != nil || !stored || a > limit {
				t.Fatalf("PutIfAbsent of %d bytes: %v, %v, allocating %d bytes", n, stored, err, a)
			}
			if a := allocated(func() { err = s.Put([]byte("big2"), v) }); err != nil || a > limit {
				t.Fatalf("Put of %d bytes: %v, allocating %d bytes", n, err, a)
			}
			if err := s.Put([]byte("small"), []byte("abc")); err != nil {
				t.Fatal(err)
			}
			for reopen := range 2 {
				if reopen == 1 {
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					if s, err = store.Open(dir, opts...); err != nil {
						t.Fatal(err)
					}
				}
				if reopen == 1 && real {
					// The log is mapped anew: the lookups that need no
					// value read none of its pages through the mapping.
					before, ok := rssFile(t)
					if stored, err := s.PutIfAbsent([]byte("big"), v); err != nil || stored {
						t.Fatalf("PutIfAbsent of a present key: %v, %v", stored, err)
					}
					if has, err := s.Has([]byte("big2")); err != nil || !has {
						t.Fatalf("Has: %v, %v", has, err)
					}
					if eq, err := s.ValueEquals([]byte("big2"), v); err != nil || !eq {
						t.Fatalf("ValueEquals: %v, %v", eq, err)
					}
					if after, _ := rssFile(t); ok && after-before > n/4 {
						t.Fatalf("PutIfAbsent, Has and ValueEquals of two values of %d bytes mapped %d bytes of the log", n, after-before)
					}
				}
				for _, k := range []string{"big", "big2"} {
					if got, err := s.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
						t.Fatalf("Get(%s): %d bytes, %v", k, len(got), err)
					}
				}
				// The least of three runs, under the bound of a write: what
				// the runtime or a goroutine of the store allocates meanwhile
				// counts too (it did, 332 KB once, against 256 KiB).
				var eq bool
				a := uint64(1 << 62)
				for range 3 {
					a = min(a, allocated(func() { eq, err = s.ValueEquals([]byte("big"), v) }))
				}
				if err != nil || !eq || a > n/8 {
					t.Fatalf("ValueEquals of the value stored (reopened %v): %v, %v, allocating %d bytes", reopen == 1, eq, err, a)
				}
				for _, at := range []int{0, 1 << 16, n / 2, n - 1} {
					w := bytes.Clone(v)
					w[at] ^= 1
					if eq, err := s.ValueEquals([]byte("big"), w); err != nil || eq {
						t.Fatalf("ValueEquals, byte %d differing: %v, %v", at, eq, err)
					}
				}
				for _, w := range [][]byte{v[:n-1], append(bytes.Clone(v), 'x'), nil} {
					if eq, err := s.ValueEquals([]byte("big"), w); err != nil || eq {
						t.Fatalf("ValueEquals with %d bytes: %v, %v", len(w), eq, err)
					}
				}
				if eq, err := s.ValueEquals([]byte("small"), []byte("abc")); err != nil || !eq {
					t.Fatalf("ValueEquals of a small value: %v, %v", eq, err)
				}
				if eq, err := s.ValueEquals([]byte("small"), []byte("abd")); err != nil || eq {
					t.Fatalf("ValueEquals of a small value, differing: %v, %v", eq, err)
				}
				if eq, err := s.ValueEquals([]byte("absent"), v); !errors.Is(err, store.ErrNotFound) || eq {
					t.Fatalf("ValueEquals of an absent key: %v, %v", eq, err)
				}
			}
			s.Close()
			// A bit of the stored value flipped: ValueEquals checks the
			// record's checksum, as Get does.
			file := filepath.Join(dir, "0000000000000000.log")
			var b []byte
			if real {
				b, err = os.ReadFile(file)
			} else {
				b = fs.ReadFileBytes(file)
			}
			if err != nil {
				t.Fatal(err)
			}
			b[40+n/2] ^= 4
			if real {
				err = os.WriteFile(file, b, 0o644)
			} else {
				fs.WriteFileBytes(file, b)
			}
			if err != nil {
				t.Fatal(err)
			}
			if s, err = store.Open(dir, opts...); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if eq, err := s.ValueEquals([]byte("big"), v); !errors.Is(err, store.ErrCorrupt) || eq {
				t.Fatalf("ValueEquals of a damaged record: %v, %v", eq, err)
			}
		})
	}
}
