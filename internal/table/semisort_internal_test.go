package table

import (
	"math/rand/v2"
	"testing"
)

// TestSemiCodes checks the nibble code tables: every sorted multiset of 4
// nibbles has exactly one code below 3876, and decoding inverts ranking.
func TestSemiCodes(t *testing.T) {
	seen := map[uint64]bool{}
	for a := uint64(0); a < 16; a++ {
		for b := a; b < 16; b++ {
			for c := b; c < 16; c++ {
				for d := c; d < 16; d++ {
					code := ssRank([4]uint64{a, b, c, d})
					if code >= ssCodes || seen[code] {
						t.Fatalf("(%d,%d,%d,%d) ranks %d", a, b, c, d, code)
					}
					seen[code] = true
					if got := ssDecode[code]; got != uint16(a|b<<4|c<<8|d<<12) {
						t.Fatalf("code %d decodes to %#x", code, got)
					}
				}
			}
		}
	}
	if len(seen) != ssCodes {
		t.Fatalf("%d codes", len(seen))
	}
}

// TestSemiFastPathMatchesDecode is the differential test of the SWAR
// lookup (semiMatches) against a full decode of the bucket, for every
// fingerprint width, on random bucket contents.
func TestSemiFastPathMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for f := uint64(4); f <= 32; f++ {
		tb := New(6, 4, f, true)
		for trial := 0; trial < 2000; trial++ {
			i := r.Uint64N(6)
			var v [4]uint64
			for j := range v {
				switch r.IntN(4) {
				case 0: // empty
				case 1: // a copy of slot 0, to test equal nibbles and values
					v[j] = v[0]
				default:
					v[j] = r.Uint64N(1<<f-1) + 1
				}
			}
			tb.semiWrite(i, v)
			if !tb.SemiValid(i) {
				t.Fatalf("f=%d: written bucket not canonical", f)
			}
			got := tb.semiRead(i)
			for _, q := range append(v[:], r.Uint64N(1<<f-1)+1, 0) {
				want := uint64(0)
				for j, x := range got {
					if x == q {
						want |= 1 << j
					}
				}
				if m := tb.semiMatches(i, q); m != want {
					t.Fatalf("f=%d bucket %x query %#x: fast path %04b, decode %04b", f, got, q, m, want)
				}
			}
			// Neighbours are untouched by writes.
			for k := uint64(0); k < 6; k++ {
				if !tb.SemiValid(k) {
					t.Fatalf("f=%d: bucket %d corrupted by a write to bucket %d", f, k, i)
				}
			}
		}
	}
}

// FuzzSemiBucket writes arbitrary fingerprints into a semi-sorted bucket
// and checks the fast lookup against the decoded contents.
func FuzzSemiBucket(f *testing.F) {
	f.Add(uint8(13), uint32(1), uint32(2), uint32(3), uint32(0), uint32(2))
	f.Add(uint8(32), uint32(0xffffffff), uint32(0x10), uint32(0x10), uint32(0x11), uint32(0x10))
	f.Fuzz(func(t *testing.T, bits uint8, a, b, c, d, q uint32) {
		fb := 4 + uint64(bits)%29
		mask := uint64(1)<<fb - 1
		tb := New(2, 4, fb, true)
		v := [4]uint64{uint64(a) & mask, uint64(b) & mask, uint64(c) & mask, uint64(d) & mask}
		tb.semiWrite(1, v)
		got := tb.semiRead(1)
		for _, x := range v {
			if tb.semiMatches(1, x) == 0 {
				t.Fatalf("f=%d: %#x written but not found in %x", fb, x, got)
			}
		}
		want := uint64(0)
		for j, x := range got {
			if x == uint64(q)&mask {
				want |= 1 << j
			}
		}
		if m := tb.semiMatches(1, uint64(q)&mask); m != want {
			t.Fatalf("f=%d: fast path %04b, decode %04b", fb, m, want)
		}
		if tb.semiRead(0) != [4]uint64{} || tb.Words[len(tb.Words)-1] != 0 {
			t.Fatal("write spilled into bucket 0")
		}
	})
}
