package hash

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestGolden pins the function: these values are part of every persisted
// filter and must never change.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		in   string
		seed uint64
		want uint64
	}{
		{"", 0, 0x74013c39605663ec},
		{"a", 0, 0x52e00efd413394db},
		{"abc", 1, 0x6321df1773a86392},
		{"abcd", 2, 0x1d5fea558573e5eb},
		{"hello, world", 3, 0x727d7f0e70b774aa},
		{"0123456789abcdef", 4, 0xafdf4604ae12282d},
		{"0123456789abcdefg", 5, 0x1f49e9acc998f3a1},
		{"https://example.com/a/rather/long/path?with=query&and=more#frag", 6, 0x8997db8049c5bc3a},
		{string(make([]byte, 200)), 7, 0xa2a64d8b16f9fe6e},
	} {
		if got := Sum64([]byte(tc.in), tc.seed); got != tc.want {
			t.Errorf("Sum64(%.20q, %d) = %#x, want %#x", tc.in, tc.seed, got, tc.want)
		}
		if got := Sum64String(tc.in, tc.seed); got != tc.want {
			t.Errorf("Sum64String(%.20q, %d) = %#x, want %#x", tc.in, tc.seed, got, tc.want)
		}
	}
}

func TestUint64MatchesBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var buf [8]byte
	for i := 0; i < 10000; i++ {
		v, seed := r.Uint64(), r.Uint64()
		binary.LittleEndian.PutUint64(buf[:], v)
		if a, b := Sum64Uint64(v, seed), Sum64(buf[:], seed); a != b {
			t.Fatalf("Sum64Uint64(%#x) = %#x, Sum64 of its bytes = %#x", v, a, b)
		}
	}
}

// TestEveryByteMatters changes each byte of keys of every length up to 200
// and requires a different hash: a read pattern that skipped a byte would
// fail here.
func TestEveryByteMatters(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := 1; n <= 200; n++ {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		h := Sum64(p, 99)
		for i := range p {
			p[i] ^= 0x10
			if Sum64(p, 99) == h {
				t.Fatalf("len %d: flipping byte %d does not change the hash", n, i)
			}
			p[i] ^= 0x10
		}
	}
}

// TestAvalanche flips single input bits and single seed bits and checks that
// every output bit flips with probability close to 1/2. With 4000 trials per
// cell, sigma is 0.0079; the bound 0.06 is about 7.5 sigma, so a healthy hash
// fails it with negligible probability, while a weak mixer (one whose output
// bit ignores an input bit) sits at 0 or 1.
func TestAvalanche(t *testing.T) {
	const trials = 4000
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{3, 8, 13, 16, 24, 40, 64, 100} {
		p := make([]byte, n)
		inBits := n * 8
		if inBits > 128 {
			inBits = 128
		}
		for ib := 0; ib < inBits+64; ib++ {
			var flips [64]int
			for tr := 0; tr < trials; tr++ {
				for i := range p {
					p[i] = byte(r.Uint32())
				}
				seed := r.Uint64()
				h0 := Sum64(p, seed)
				var h1 uint64
				if ib < inBits {
					p[ib/8] ^= 1 << (ib % 8)
					h1 = Sum64(p, seed)
				} else {
					h1 = Sum64(p, seed^1<<(ib-inBits))
				}
				d := h0 ^ h1
				for d != 0 {
					flips[bits.TrailingZeros64(d)]++
					d &= d - 1
				}
			}
			for ob, c := range flips {
				if p := float64(c) / trials; math.Abs(p-0.5) > 0.06 {
					t.Fatalf("len %d: input bit %d flips output bit %d with probability %.3f", n, ib, ob, p)
				}
			}
		}
	}
}

// TestUniformHalves checks that sequential keys spread evenly over 1024
// buckets taken from the top bits and from the low bits (the filters take the
// bucket index from one half and the fingerprint from the other). Chi-square
// with 1023 degrees of freedom: mean 1023, sigma 45; the bound is mean + 6 sigma.
func TestUniformHalves(t *testing.T) {
	const n, buckets = 1 << 20, 1024
	var hi, lo [buckets]int
	var buf [8]byte
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint64(buf[:], uint64(i))
		h := Sum64(buf[:], 42)
		hi[h>>54]++
		lo[h&(buckets-1)]++
	}
	for name, c := range map[string]*[buckets]int{"high": &hi, "low": &lo} {
		exp := float64(n) / buckets
		chi := 0.0
		for _, v := range c {
			d := float64(v) - exp
			chi += d * d / exp
		}
		if chi > 1023+6*45 {
			t.Errorf("%s bits: chi-square %.0f over 1023 degrees of freedom", name, chi)
		}
	}
}

func TestMix64Bijective(t *testing.T) {
	seen := make(map[uint64]bool, 1<<16)
	for i := uint64(0); i < 1<<16; i++ {
		h := Mix64(i)
		if seen[h] {
			t.Fatalf("Mix64 collision at %d", i)
		}
		seen[h] = true
	}
	if Mix64(0) != 0 {
		t.Fatal("Mix64(0) != 0")
	}
}

func TestNoAllocs(t *testing.T) {
	p := []byte("https://example.com/some/path")
	s := string(p)
	if a := testing.AllocsPerRun(100, func() { Sum64(p, 1); Sum64String(s, 1) }); a != 0 {
		t.Fatalf("%v allocations per run", a)
	}
}

var sink uint64

func BenchmarkSum64(b *testing.B) {
	for _, n := range []int{8, 16, 32, 60, 256} {
		p := make([]byte, n)
		b.Run("len="+itoa(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				sink += Sum64(p, sink)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestShortKeyWords pins the 4..16-byte arms of Sum64 against the way they
// were first written, with four 4-byte reads: any rewrite of those arms
// for speed must give the same words, or persisted filters break.
func TestShortKeyWords(t *testing.T) {
	word := func(p []byte, i int) uint64 { return uint64(binary.LittleEndian.Uint32(p[i:])) }
	reference := func(p []byte, seed uint64) uint64 {
		n := len(p)
		s := NewSeeded(seed).state ^ uint64(n)
		delta := (n & 24) >> (n >> 3) // 0 for 4..7 bytes, 4 for 8..16
		a := word(p, 0)<<32 | word(p, n-4)
		b := word(p, delta)<<32 | word(p, n-4-delta)
		hi, lo := bits.Mul64(a^k1^s, b^s^k2)
		return mix(lo^k0^uint64(n)^s, hi^k1)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for n := 4; n <= 16; n++ {
		p := make([]byte, n)
		for range 2000 {
			for i := range p {
				p[i] = byte(r.Uint32())
			}
			seed := r.Uint64()
			if got, want := Sum64(p, seed), reference(p, seed); got != want {
				t.Fatalf("Sum64(%x, %#x) = %#x, the four-word reading gives %#x", p, seed, got, want)
			}
		}
	}
}
