package table

import (
	"fmt"
	"testing"
)

// TestLastReadWordCoversReadsInsideTable: for every bucket of tables of
// every plain and semi-sorted shape whose buckets may straddle words (the
// ones whose prefetches ask for LastReadWord's line), LastReadWord is an
// index of the table's words (the portable prefetch.Words loads it) and no
// read of the bucket goes past it: its own bits, LoadWindow's two words,
// windowPair's three, and the 16 bytes from its first byte that the
// chain's lookups read (buckets of 64 to 120 bits).
func TestLastReadWordCoversReadsInsideTable(t *testing.T) {
	for _, slots := range []uint64{1, 2, 3, 4, 6, 8} {
		for f := uint64(2); f <= 32; f++ {
			for _, semi := range []bool{false, true} {
				if semi && (slots != 4 || f < 5) {
					continue
				}
				// 67 buckets: the last bucket ends at every offset of its
				// word across the shapes, and some end in the word just
				// before the padding one.
				tb := New(67, slots, f, semi)
				if tb.Aligned {
					continue
				}
				t.Run(fmt.Sprintf("b=%d/f=%d/semi=%v", slots, f, semi), func(t *testing.T) {
					bb := tb.BucketBits
					for i := range tb.NumBuckets {
						p := i * bb
						last := LastReadWord(p, bb)
						if last >= uint64(len(tb.Words)) {
							t.Fatalf("bucket %d: LastReadWord %d, the table has %d words", i, last, len(tb.Words))
						}
						reads := []struct {
							name string
							word uint64
						}{{"the bucket's last bit", (p + bb - 1) >> 6}}
						if bb < 64 && !semi {
							reads = append(reads, struct {
								name string
								word uint64
							}{"LoadWindow", p>>6 + 1})
						}
						if tb.Windows == 2 && !semi {
							reads = append(reads, struct {
								name string
								word uint64
							}{"windowPair", p>>6 + 2})
						}
						if bb >= 64 && bb <= 120 {
							reads = append(reads, struct {
								name string
								word uint64
							}{"the 16 bytes from the first byte", (p>>3 + 15) >> 3})
						}
						for _, r := range reads {
							if r.word > last {
								t.Fatalf("bucket %d: %s reads word %d, past LastReadWord %d", i, r.name, r.word, last)
							}
						}
					}
				})
			}
		}
	}
}

// TestPipelineLocatesAsPair: a Pipeline's groups hold each hash's buckets
// and fingerprint as Table.Pair gives them, in tables of one segment and
// of several, aligned or not, so that the batches may insert with them
// (Multiset.AddAbsentAt) without locating the keys again.
func TestPipelineLocatesAsPair(t *testing.T) {
	hashes := make([]uint64, 1000)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range hashes {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		hashes[i] = x
	}
	for _, slots := range []uint64{2, 4, 8} {
		for _, f := range []uint64{8, 12, 16, 17, 32} {
			for _, segments := range []uint64{1, 4} {
				tb := New(1<<10, slots, f, false)
				if segments > 1 {
					tb.Segment(segments)
				}
				p := NewPipeline(tb.Locator(), 0, nil, hashes)
				for cur, start, ok := p.Next(); ok; cur, start, ok = p.Next() {
					for k, h := range cur.H[:cur.N] {
						i1, i2, fp := tb.Pair(h)
						if h != hashes[start+k] || cur.I1[k] != i1 || cur.I2[k] != i2 || cur.FP[k] != fp {
							t.Fatalf("b=%d f=%d segments=%d: hash %d located at (%d, %d, %#x), Pair (%d, %d, %#x)",
								slots, f, segments, start+k, cur.I1[k], cur.I2[k], cur.FP[k], i1, i2, fp)
						}
					}
				}
			}
		}
	}
}
