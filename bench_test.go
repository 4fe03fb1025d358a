package cuckoo_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"testing"
	"unsafe"

	"github.com/dedupkit/cuckoo"
	"github.com/dedupkit/cuckoo/internal/addr"
	"github.com/dedupkit/cuckoo/internal/hash"
)

// Benchmarks, named so benchstat can group them:
//
//	go test -run '^$' -bench . -benchmem -count 10 | tee new.txt
//	benchstat old.txt new.txt
//
// Large filters are built once per shape, lazily, and shared by the
// benchmarks that only read them.

type benchShape struct {
	n       uint64
	b, bits int
	semi    bool
}

func (s benchShape) String() string {
	if s.semi {
		return fmt.Sprintf("n=%s/f=%d/b=%d/semi", human(s.n), s.bits, s.b)
	}
	return fmt.Sprintf("n=%s/f=%d/b=%d", human(s.n), s.bits, s.b)
}

func (s benchShape) opts() []cuckoo.Option {
	o := []cuckoo.Option{cuckoo.WithBucketSize(s.b), cuckoo.WithFingerprintBits(s.bits), cuckoo.WithSeed(1)}
	if s.semi {
		o = append(o, cuckoo.WithSemiSorting())
	}
	return o
}

func human(n uint64) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dK", n/1e3)
	}
	return fmt.Sprint(n)
}

var benchShapes = []benchShape{
	{1_000_000, 4, 16, false}, {1_000_000, 4, 12, false}, {1_000_000, 4, 8, false}, {1_000_000, 4, 13, true},
	{10_000_000, 4, 16, false}, {10_000_000, 4, 12, false}, {10_000_000, 4, 13, true},
}

// benchKeys are 16-byte keys: present ones (family 0) and absent ones
// (family 1).
func benchKeys(family, n uint64) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = key(family, uint64(i))
	}
	return keys
}

var cache struct {
	sync.Mutex
	filters map[benchShape]*cuckoo.Filter
	keys    map[[2]uint64][][]byte
}

// cachedKeys returns the n keys of a family, built once.
func cachedKeys(family, n uint64) [][]byte {
	cache.Lock()
	defer cache.Unlock()
	if cache.keys == nil {
		cache.keys = map[[2]uint64][][]byte{}
	}
	k := [2]uint64{family, n}
	if cache.keys[k] == nil {
		cache.keys[k] = benchKeys(family, n)
	}
	return cache.keys[k]
}

// fullFilter returns the shared filter of the shape holding the present
// keys 0..n-1, and those keys.
func fullFilter(b *testing.B, s benchShape) (*cuckoo.Filter, [][]byte) {
	keys := cachedKeys(0, s.n)
	cache.Lock()
	defer cache.Unlock()
	if cache.filters == nil {
		cache.filters = map[benchShape]*cuckoo.Filter{}
	}
	if f := cache.filters[s]; f != nil {
		return f, keys
	}
	f, err := cuckoo.New(s.n, s.opts()...)
	if err != nil {
		b.Fatal(err)
	}
	for _, k := range keys {
		if err := f.Add(k); err != nil {
			b.Fatal(err)
		}
	}
	cache.filters[s] = f
	return f, keys
}

// BenchmarkFilter_Add fills a filter from empty to capacity and reports
// the time per insert, the figure the performance issue compares.
func BenchmarkFilter_Add(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.String(), func(b *testing.B) {
			keys := cachedKeys(0, s.n)
			f, _ := cuckoo.New(s.n, s.opts()...)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(keys) {
					b.StopTimer()
					f.Reset()
					i = 0
					b.StartTimer()
				}
				if err := f.Add(keys[i]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkFilter_Contains(b *testing.B) {
	for _, s := range benchShapes {
		for _, hit := range []bool{true, false} {
			b.Run(fmt.Sprintf("%v/hit=%v", s, hit), func(b *testing.B) {
				f, keys := fullFilter(b, s)
				if !hit {
					keys = cachedKeys(1, s.n)
				}
				b.ReportAllocs()
				i, found := 0, 0
				for b.Loop() {
					if f.Contains(keys[i]) {
						found++
					}
					if i++; i == len(keys) {
						i = 0
					}
				}
				if hit && found < b.N {
					b.Fatalf("%d of %d present keys found", found, b.N)
				}
			})
		}
	}
}

// BenchmarkFilter_Delete deletes every key of a full filter, then re-adds
// them untimed, and so on.
func BenchmarkFilter_Delete(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(s.String(), func(b *testing.B) {
			keys := cachedKeys(0, s.n)
			f, _ := cuckoo.New(s.n, s.opts()...)
			refill := func() {
				f.Reset()
				for _, k := range keys {
					f.Add(k)
				}
			}
			refill()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if i == len(keys) {
					b.StopTimer()
					refill()
					i = 0
					b.StartTimer()
				}
				if !f.Delete(keys[i]) {
					b.Fatal("Delete of a present key failed")
				}
				i++
			}
		})
	}
}

// BenchmarkFilter_ContainsString and _ContainsHash show the cost of the
// key forms: a string key hashes like []byte; a pre-hashed key skips it.
func BenchmarkFilter_ContainsString(b *testing.B) {
	s := benchShape{1_000_000, 4, 16, false}
	f, keys := fullFilter(b, s)
	strs := make([]string, len(keys))
	for i, k := range keys {
		strs[i] = string(k)
	}
	b.Run(s.String(), func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.ContainsString(strs[i])
			if i++; i == len(strs) {
				i = 0
			}
		}
	})
}

func BenchmarkFilter_ContainsHash(b *testing.B) {
	s := benchShape{1_000_000, 4, 16, false}
	f, _ := cuckoo.New(s.n, cuckoo.WithSeed(1))
	for v := uint64(0); v < s.n; v++ {
		f.AddHash(v * 0x9e3779b97f4a7c15)
	}
	b.Run(s.String(), func(b *testing.B) {
		b.ReportAllocs()
		v := uint64(0)
		for b.Loop() {
			f.ContainsHash(v * 0x9e3779b97f4a7c15)
			if v++; v == s.n {
				v = 0
			}
		}
	})
}

// BenchmarkFilter_Batch compares one-at-a-time Contains with ContainsBatch
// per key, on absent keys (every lookup probes both buckets). Each
// iteration looks up batchKeys keys; the ns/key metric is what to compare.
// Sizes of 10^8 items build a 210 MB filter and take minutes: they run only
// with CUCKOO_BENCH_HUGE=1 in the environment; CUCKOO_BENCH_HUGE=1e9 adds
// 10^9 items (a 2.1 GB table at f = 16, built in several minutes, with
// huge pages only).
//
//	CUCKOO_BENCH_HUGE=1e9 go test -run '^$' -bench 'Filter_Batch/n=1000M' -timeout 1h
func BenchmarkFilter_Batch(b *testing.B) {
	sizes := []uint64{1_000_000, 10_000_000}
	if huge := os.Getenv("CUCKOO_BENCH_HUGE"); huge != "" {
		sizes = append(sizes, 100_000_000)
		if huge == "1e9" {
			sizes = append(sizes, 1_000_000_000)
		}
	}
	const batchKeys = 1024
	for _, n := range sizes {
		s := benchShape{n, 4, 16, false}
		for _, thp := range []bool{true, false} {
			if !thp && n >= 1_000_000_000 {
				continue // a second 2 GB table to build, for little news
			}
			for _, mode := range []string{"single", "batch"} {
				b.Run(fmt.Sprintf("%v/thp=%v/mode=%s", s, thp, mode), func(b *testing.B) {
					f := hugeFilter(b, s, thp)
					arena := make([]byte, 16*batchKeys)
					keys := make([][]byte, batchKeys)
					for i := range keys {
						keys[i] = arena[16*i : 16*i+16 : 16*i+16]
					}
					found := make([]bool, batchKeys)
					next := uint64(0)
					hits := 0
					b.ReportAllocs()
					for b.Loop() {
						for i := range keys {
							copy(keys[i], key(1, next))
							next++
						}
						if mode == "single" {
							for i, k := range keys {
								found[i] = f.Contains(k)
							}
						} else {
							f.ContainsBatch(keys, found)
						}
						for _, ok := range found {
							if ok {
								hits++
							}
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batchKeys), "ns/key")
					if rate := float64(hits) / float64(b.N*batchKeys); rate > 0.01 {
						b.Fatalf("false-positive rate %.4f", rate)
					}
				})
			}
		}
	}
}

// hugeFilter returns a shared filter of the shape with keys 0..n-1 added,
// built with AddBatch from keys made on the fly (10^8 stored keys would
// not fit the benchmark's memory).
//
// thp says whether the table may use transparent huge pages (Linux; the
// filter asks for them from 32 MiB on).
func hugeFilter(b *testing.B, s benchShape, thp bool) *cuckoo.Filter {
	cache.Lock()
	defer cache.Unlock()
	if cache.filters == nil {
		cache.filters = map[benchShape]*cuckoo.Filter{}
	}
	hs := s
	hs.n |= 1 << 63 // a key of its own: built differently from fullFilter's
	if !thp {
		hs.n |= 1 << 62
	}
	if f := cache.filters[hs]; f != nil {
		return f
	}
	defer cuckoo.SetHugePages(cuckoo.SetHugePages(thp))
	f, err := cuckoo.New(s.n, s.opts()...)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([][]byte, 4096)
	for start := uint64(0); start < s.n; start += uint64(len(keys)) {
		m := min(uint64(len(keys)), s.n-start)
		for i := uint64(0); i < m; i++ {
			keys[i] = key(0, start+i)
		}
		if _, err := f.AddBatch(keys[:m]); err != nil {
			b.Fatal(err)
		}
	}
	cache.filters[hs] = f
	return f
}

// BenchmarkFilter_ContainsHashFloor puts one-at-a-time ContainsHash of
// present keys beside the least any two-bucket lookup costs on this
// machine: a loop that, per key, reads two independent random words of a
// table of the same size and combines them (floor). The ratio of the two
// is how far the lookup is from the memory floor at each size; 10^8 keys
// (about 200 MiB at f = 16) run with CUCKOO_BENCH_HUGE=1. A third loop
// (addressed) reads the two words at the places a lookup reads, computed
// as ContainsHash computes them (fingerprint, bucket, alternate bucket,
// byte offset), and compares nothing: between floor and addressed is the
// cost of the addressing. A fourth (inlined) adds ContainsHash's compare
// to the addressed loop: it is ContainsHash inlined by hand, the least a
// lookup of this table format costs; between it and ContainsHash is the
// call.
//
//	go test -run '^$' -bench ContainsHashFloor -count 6
func BenchmarkFilter_ContainsHashFloor(b *testing.B) {
	sizes := []uint64{1_000_000, 10_000_000}
	if os.Getenv("CUCKOO_BENCH_HUGE") != "" {
		sizes = append(sizes, 100_000_000)
	}
	const probes = 1 << 20
	// Random hashes for the loops that read a table of their own.
	randomHashes := make([]uint64, probes)
	for i := range randomHashes {
		randomHashes[i] = hash.Mix64(uint64(i) + 1)
	}
	for _, n := range sizes {
		for _, bits := range []int{8, 16} {
			s := benchShape{n, 4, bits, false}
			b.Run(s.String()+"/impl=ContainsHash", func(b *testing.B) {
				f := hugeFilter(b, s, true)
				hs := make([]uint64, probes)
				for i := range hs {
					hs[i] = hash.Sum64(key(0, hash.Mix64(uint64(i))%n), f.Seed())
				}
				found := 0
				i := 0
				for b.Loop() {
					if f.ContainsHash(hs[i&(probes-1)]) {
						found++
					}
					i++
				}
				if found != i {
					b.Fatalf("%d of %d present keys found", found, i)
				}
			})
			b.Run(s.String()+"/impl=floor", func(b *testing.B) {
				f := hugeFilter(b, s, true)
				words := make([]uint64, f.TableBytes()/8)
				for i := range words {
					words[i] = hash.Mix64(uint64(i))
				}
				m, hs := uint64(len(words)), randomHashes
				var sink uint64
				i := 0
				for b.Loop() {
					h := hs[i&(probes-1)]
					sink += words[(h>>32)*m>>32] ^ words[uint64(uint32(h))*m>>32]
					i++
				}
				floorSink = sink
			})
			// A table of random words the size of the filter's, read at the
			// places a lookup of the filter would read.
			addressed := func(b *testing.B) (base unsafe.Pointer, m, fpMask, bucketBytes uint64) {
				f := hugeFilter(b, s, true)
				m, fpMask = f.NumBuckets(), uint64(1)<<bits-1
				bucketBytes = uint64(4 * bits / 8)
				table := make([]byte, m*bucketBytes+8)
				for i := 0; i+8 <= len(table); i += 8 {
					binary.LittleEndian.PutUint64(table[i:], hash.Mix64(uint64(i)))
				}
				return unsafe.Pointer(unsafe.SliceData(table)), m, fpMask, bucketBytes
			}
			b.Run(s.String()+"/impl=addressed", func(b *testing.B) {
				base, m, fpMask, bucketBytes := addressed(b)
				hs := randomHashes
				var sink uint64
				i := 0
				for b.Loop() {
					h := hs[i&(probes-1)]
					o1, o2 := lookupOffsets(h, addr.Fingerprint(h, fpMask), m, bucketBytes)
					sink += *(*uint64)(unsafe.Add(base, o1)) ^ *(*uint64)(unsafe.Add(base, o2))
					i++
				}
				floorSink = sink
			})
			b.Run(s.String()+"/impl=inlined", func(b *testing.B) {
				base, m, fpMask, bucketBytes := addressed(b)
				low := uint64(1)<<(3*bits) | 1<<(2*bits) | 1<<bits | 1 // 4 lanes of bits
				high := low << (bits - 1)
				hs := randomHashes
				found := 0
				i := 0
				for b.Loop() {
					h := hs[i&(probes-1)]
					fp := addr.Fingerprint(h, fpMask)
					o1, o2 := lookupOffsets(h, fp, m, bucketBytes)
					x := *(*uint64)(unsafe.Add(base, o1)) ^ fp*low
					y := *(*uint64)(unsafe.Add(base, o2)) ^ fp*low
					if ((x-low)&^x|(y-low)&^y)&high != 0 {
						found++
					}
					i++
				}
				floorSink = uint64(found)
			})
		}
	}
}

var floorSink uint64

// lookupOffsets returns the byte offsets of the two buckets a lookup of
// hash h, whose fingerprint is fp, reads in a table of m buckets of
// bucketBytes bytes, computed as ContainsHash computes them. It is small
// enough to inline, so the loops that use it make no call.
func lookupOffsets(h, fp, m, bucketBytes uint64) (o1, o2 uint64) {
	i1 := addr.Bucket(h, m)
	return i1 * bucketBytes, addr.Alt(i1, fp, m) * bucketBytes
}
