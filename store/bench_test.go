package store_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/dedupkit/cuckoo/store"
)

// benchStore is a store of n keys of 16 bytes with 100-byte values,
// built once per size.
var benchStores sync.Map

func benchKey(dst []byte, i uint64, absent bool) []byte {
	if absent {
		i |= 1 << 63
	}
	dst = binary.LittleEndian.AppendUint64(dst[:0], i*0x9e3779b97f4a7c15)
	return binary.LittleEndian.AppendUint64(dst, i)
}

func loaded(b *testing.B, n int) *store.Store {
	if s, ok := benchStores.Load(n); ok {
		return s.(*store.Store)
	}
	s, err := store.Open(b.TempDir()+fmt.Sprint("/s", n), store.WithSync(store.SyncNever))
	if err != nil {
		b.Fatal(err)
	}
	fill(b, s, n)
	s.Sync()
	benchStores.Store(n, s)
	return s
}

// fill puts benchKey 0 to n−1 into s, with values of 100 bytes.
func fill(b *testing.B, s *store.Store, n int) {
	v := make([]byte, 100)
	var k []byte
	for i := range uint64(n) {
		k = benchKey(k, i, false)
		if err := s.Put(k, v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStore_Get(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		for _, hit := range []bool{true, false} {
			b.Run(fmt.Sprintf("n=%d/hit=%v", n, hit), func(b *testing.B) {
				s := loaded(b, n)
				b.ReportAllocs()
				var k []byte
				i := uint64(0)
				for b.Loop() {
					k = benchKey(k, i%uint64(n), !hit)
					i += 7919
					v, err := s.Get(k)
					if hit && (err != nil || len(v) != 100) {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkStore_Put: new keys into an empty store, with the default
// index checkpoints and with none, for what checkpoints cost a writer
// (they run in the background; at -benchtime 3000000x a run passes about
// a dozen).
func BenchmarkStore_Put(b *testing.B) {
	for _, ck := range []bool{true, false} {
		b.Run(fmt.Sprintf("checkpoints=%v", ck), func(b *testing.B) {
			opts := []store.Option{store.WithSync(store.SyncNever)}
			if !ck {
				opts = append(opts, store.WithCheckpoints(0, 0))
			}
			s, err := store.Open(b.TempDir(), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			v := make([]byte, 100)
			var k []byte
			i := uint64(0)
			b.ReportAllocs()
			for b.Loop() {
				k = benchKey(k, i, false)
				i++
				if err := s.Put(k, v); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Stats().Checkpoints), "checkpoints")
		})
	}
}

// BenchmarkStore_Checkpoint: one index checkpoint of a store of 10^6 keys
// (encode, write, sync, rename); bytes are the index's.
func BenchmarkStore_Checkpoint(b *testing.B) {
	s, err := store.Open(b.TempDir(), store.WithSync(store.SyncNever), store.WithCheckpoints(0, 0))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fill(b, s, 1_000_000)
	b.SetBytes(int64(s.Stats().IndexBytes))
	for b.Loop() {
		if err := s.Checkpoint(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore_Compact: the time per live record of a compaction of a
// store where half the records are garbage.
func BenchmarkStore_Compact(b *testing.B) {
	const n = 200_000
	for b.Loop() {
		b.StopTimer()
		s, err := store.Open(b.TempDir(), store.WithSync(store.SyncNever), store.WithAutoCompact(0, 0))
		if err != nil {
			b.Fatal(err)
		}
		v := make([]byte, 100)
		var k []byte
		for i := range uint64(2 * n) {
			k = benchKey(k, i%n, false)
			s.Put(k, v)
		}
		b.StartTimer()
		if err := s.Compact(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/record")
}

// BenchmarkStore_OpenCheckpoint: Open of a store closed with its index
// checkpoint (nothing to replay): the checkpoint read, decoded and
// checked; the Close after each Open is not timed.
func BenchmarkStore_OpenCheckpoint(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			s, err := store.Open(dir, store.WithSync(store.SyncNever))
			if err != nil {
				b.Fatal(err)
			}
			fill(b, s, n)
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				s, err := store.Open(dir, store.WithSync(store.SyncNever))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if st := s.Stats(); st.Replayed != 0 || st.CheckpointUnused != "" {
					b.Fatalf("Open replayed %d records: %q", st.Replayed, st.CheckpointUnused)
				}
				s.Close()
				b.StartTimer()
			}
		})
	}
}
