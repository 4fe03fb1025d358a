package bloom

import (
	"fmt"
	"math"
	"sync"
)

// This file holds the false-positive model both layouts are sized with. The
// rates are exact expectations (over the random hash) rather than the
// textbook approximation (1−e^(−kn/m))^k, which errs on the low side: it
// ignores that a key's k positions may repeat and, for the blocked layout,
// that blocks hold unequal numbers of keys. Every sum below has positive
// terms only, so it stays accurate down to the smallest rates.

// maxInt is the largest int, as an untyped constant: 2^63−1 or 2^31−1.
const maxInt = 1<<(32<<(^uint(0)>>63)-1) - 1

const (
	blockWords = 8                            // words per block: one 64-byte cache line
	blockBits  = blockWords * 64              // bits per block
	maxK       = 64                           // most probes per key, either layout
	maxWords   = uint64(min(1<<37, maxInt/8)) // largest table: 1 TiB (2 GiB on 32-bit CPUs)
	maxLayers  = 256                          // most layers of a Scalable filter
	maxSizes   = 256                          // entries kept in blockedCache

	// minWords is the smallest classic or counting table: one cache line.
	// Double hashing over fewer cells (a filter for a handful of keys)
	// probes positions so correlated that the rate exceeds the model's; at
	// 8 words it does not (TestFalsePositiveRateSmall).
	minWords = 8
)

// distinctDist returns P(D = d) for d = 0..k, where D is the number of
// distinct values among k independent uniform draws from cells values.
func distinctDist(k int, cells float64) []float64 {
	pd := make([]float64, k+1)
	if k == 0 {
		pd[0] = 1
		return pd
	}
	pd[1] = 1
	for s := 2; s <= k; s++ {
		for d := s; d >= 1; d-- {
			pd[d] = pd[d]*(float64(d)/cells) + pd[d-1]*(1-float64(d-1)/cells)
		}
	}
	return pd
}

// classicFPR returns the expected false-positive rate of a classic filter
// of m cells holding n keys with k probes each: Σ_d P(D=d)·s^d, where s is
// the probability that a given cell is set and D the number of distinct
// cells the absent key probes. Treating the cells as independent makes it
// an upper bound (the cells' states are negatively correlated), tight for
// any m beyond a few hundred.
func classicFPR(k int, n, m float64) float64 {
	if n <= 0 {
		return 0
	}
	return classicRate(k, m, -math.Expm1(float64(k)*n*math.Log1p(-1/m)))
}

// classicRate returns Σ_d P(D=d)·s^d: the expected false-positive rate of
// a classic filter of m cells with k probes per key in which a given cell
// is set with probability s, for positions drawn independently.
func classicRate(k int, m, s float64) float64 {
	pd := distinctDist(k, m)
	var sum, sd float64 = 0, 1
	for d := 1; d <= k; d++ {
		sd *= s
		sum += pd[d] * sd
	}
	return sum
}

// probedRate is the expected false-positive rate of the classic layout as
// it probes (classic.go), with a given cell set with probability s: that
// of independent positions plus probeFloor.
func probedRate(k int, m, s float64) float64 { return classicRate(k, m, s) + probeFloor(k, m, s) }

// probedFPR is classicFPR for the classic layout as it probes.
func probedFPR(k int, n, m float64) float64 {
	if n <= 0 {
		return 0
	}
	return probedRate(k, m, -math.Expm1(float64(k)*n*math.Log1p(-1/m)))
}

// probeFloor is what double hashing adds to the rate of independent
// positions. Position i is the cell at x + i·y (mod 1) for the key's two
// hashes x and y as fractions of 2^64 (the b += i term is negligible at
// that scale), so a key whose step y lies within δ of a fraction r/q probes
// only q runs of about 1 + k·δ·m cells each, and is a false positive with
// probability about s^(q·(1+k·δ·m)). Integrating over δ for the φ(q)
// fractions r/q in lowest terms gives
//
//	Σ_q φ(q) · 2·s^q / (q·k·m·ln(1/s)),
//
// about 2.2/(k·m) at the fill a filter is sized for: it does not fall
// with k as the rest of the rate does, so it is what a small table at a
// low rate misses its target by (20× at 30 keys and 1e-5 without it). The
// sum is doubled to cover the partial collapses between those fractions,
// which measure up to 1.4× it (TestFalsePositiveRateSmallTables).
func probeFloor(k int, m, s float64) float64 {
	if !(s > 0) || k < 2 {
		return 0 // one probe per key has no step to go wrong
	}
	if s >= 1 {
		return 1
	}
	var sum, sq float64 = 0, 1
	for q := 1; q <= k; q++ {
		sq *= s
		sum += float64(totients[q]) * sq / float64(q)
	}
	return 2 * 2 * sum / (float64(k) * m * -math.Log(s))
}

// totients holds φ(q) for q = 0..maxK, for probeFloor, which sizing
// calls for every table size it tries.
var totients = func() (t [maxK + 1]int) {
	for q := range t {
		t[q] = totient(q)
	}
	return t
}()

// totient returns Euler's φ(q): the integers in [1, q] coprime to q.
func totient(q int) int {
	n := 0
	for i := 1; i <= q; i++ {
		a, b := i, q
		for b != 0 {
			a, b = b, a%b
		}
		if a == 1 {
			n++
		}
	}
	return n
}

// classicSizing returns the hash count and the number of words of the
// smallest classic table of cellsPerWord cells per word whose expected rate
// with n keys is at most p. It starts from the textbook optimum
// m = −n·ln p/ln²2, k = m/n·ln 2, tries the integers around that k and
// grows m until the rate as probed (probedFPR) meets p, with at least
// minWords words. ok is
// false when the table would exceed maxWords.
func classicSizing(n uint64, p float64, cellsPerWord int) (k int, words uint64, ok bool) {
	nf := float64(n)
	k0 := -math.Log2(p)
	cpw := float64(cellsPerWord)
	w0 := math.Ceil(nf * -math.Log(p) / (math.Ln2 * math.Ln2) / cpw)
	kLo := min(max(1, int(math.Floor(k0))-1), maxK)
	kHi := min(max(1, int(math.Ceil(k0))+1), maxK)
	for kk := kLo; kk <= kHi; kk++ {
		fits := func(w uint64) bool { return probedFPR(kk, nf, float64(w)*cpw) <= p }
		hi := uint64(max(w0, minWords))
		for !fits(hi) {
			if hi >= maxWords {
				hi = 0
				break
			}
			hi = min(hi*2, maxWords)
		}
		if hi == 0 {
			continue
		}
		lo := uint64(minWords - 1) // below the minimum; hi always fits
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if fits(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		if words == 0 || hi < words {
			k, words = kk, hi
		}
	}
	return k, words, words != 0
}

// blockedModel computes the expected false-positive rate of the blocked
// layout with k probes per key. An absent key is a false positive when its
// k positions (independent, uniform over the 512 bits of its block) are all
// set. With j keys in the block, that happens with probability
//
//	h(j) = Σ_d P(D=d) · c_d(k·j)
//
// where D is the number of distinct positions and c_d(t) the probability
// that d given bits are all among those t independent throws set:
// c_d(t) = d/B·c_{d−1}(t−1) + (1−d/B)·c_d(t−1). Keys fall into blocks
// like a Poisson(λ) count with λ = n/blocks, so the rate is
// Σ_j Pois(j; λ)·h(j). The model is exact in expectation except for the
// Poisson step, which spreads the load a little more than n keys among a
// fixed number of blocks do, and so errs on the safe side.
type blockedModel struct {
	k  int
	pd []float64 // pd[d] = P(D = d)
	c  []float64 // c[d] = c_d(t) at t = k·(len(h)−1)
	h  []float64 // h[j], j = 0..len(h)−1
}

func newBlockedModel(k int) *blockedModel {
	m := &blockedModel{k: k, pd: distinctDist(k, blockBits), c: make([]float64, k+1), h: []float64{0}}
	m.c[0] = 1
	return m
}

// grow extends h to h[jmax].
func (m *blockedModel) grow(jmax int) {
	for len(m.h) <= jmax {
		for range m.k { // the k throws of one more key
			for d := m.k; d >= 1; d-- {
				x := float64(d) / blockBits
				m.c[d] = x*m.c[d-1] + (1-x)*m.c[d]
			}
		}
		var sum float64
		for d := 1; d <= m.k; d++ {
			sum += m.pd[d] * m.c[d]
		}
		m.h = append(m.h, sum)
	}
}

// fpr returns the expected rate at λ keys per block.
func (m *blockedModel) fpr(lambda float64) float64 {
	if !(lambda > 0) {
		return 0
	}
	// Poisson mass beyond jmax is below e^-200: negligible at any rate we
	// accept.
	jmax := int(math.Ceil(lambda + 20*math.Sqrt(lambda) + 50))
	m.grow(jmax)
	var sum float64
	if lambda < 700 {
		pj := math.Exp(-lambda)
		for j := 0; j <= jmax; j++ {
			if j > 0 {
				pj *= lambda / float64(j)
			}
			sum += pj * m.h[j]
		}
		return sum
	}
	ll := math.Log(lambda)
	for j := 0; j <= jmax; j++ {
		lg, _ := math.Lgamma(float64(j + 1))
		if lp := float64(j)*ll - lambda - lg; lp > -745 {
			sum += math.Exp(lp) * m.h[j]
		}
	}
	return sum
}

// maxLoad returns the largest λ (keys per block) whose rate is at most p.
func (m *blockedModel) maxLoad(p float64) float64 {
	// Start from the textbook estimate, which is close, and bracket.
	f := math.Pow(p, 1/float64(m.k))
	hi := -blockBits*math.Log1p(-f)/float64(m.k)*1.25 + 1
	for m.fpr(hi) <= p && hi < 1e7 {
		hi *= 2
	}
	// Halve down to a load that fits: at tiny rates it is far below 1.
	lo := hi / 2
	for m.fpr(lo) > p {
		hi, lo = lo, lo/2
	}
	for range 40 {
		mid := (lo + hi) / 2
		if m.fpr(mid) <= p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

type blockedSize struct {
	k      int
	lambda float64 // most keys per block on average
}

var blockedCache struct {
	sync.Mutex
	m map[float64]blockedSize
}

// blockedSizing returns the hash count and the load (keys per block) that
// meet rate p with the fewest bits per key. Both depend on p only, so the
// result is cached.
func blockedSizing(p float64) blockedSize {
	blockedCache.Lock()
	s, ok := blockedCache.m[p]
	blockedCache.Unlock()
	if ok {
		return s
	}
	worse := 0
	for k := 1; k <= maxK; k++ {
		l := newBlockedModel(k).maxLoad(p)
		if l > s.lambda {
			s, worse = blockedSize{k, l}, 0
		} else if worse++; worse == 3 {
			break // the load is unimodal in k: past the peak
		}
	}
	blockedCache.Lock()
	if blockedCache.m == nil || len(blockedCache.m) >= maxSizes {
		blockedCache.m = make(map[float64]blockedSize)
	}
	blockedCache.m[p] = s
	blockedCache.Unlock()
	return s
}

// blockedShape returns the hash count and the number of words of the
// blocked table for capacity n at rate p. ok is false when the table would
// exceed maxWords.
func blockedShape(n uint64, p float64) (k int, words uint64, ok bool) {
	s := blockedSizing(p)
	b := math.Ceil(float64(n) / s.lambda)
	if b > float64(maxWords/blockWords) {
		return 0, 0, false
	}
	return s.k, max(uint64(b), 1) * blockWords, true
}

// rateWithKeys returns the expected false-positive rate of a table of the
// given layout, hash count and cells (blocks, or bits and counters of a
// classic or counting table) holding n distinct keys.
func rateWithKeys(l layout, k int, cells uint64, n float64) float64 {
	if l == layoutBlocked {
		return newBlockedModel(k).fpr(n / float64(cells))
	}
	return probedFPR(k, n, float64(cells))
}

func tooLarge(capacity uint64, p float64) error {
	return fmt.Errorf("%w: capacity %d at rate %v needs a table larger than the limit of %d bytes", ErrInvalidParameter, capacity, p, maxWords*8)
}

// keysAtFill returns the number of keys n at which the expected number of
// bits set in the table equals x: the inverse of fillAt. A full table gives
// the largest finite value.
func keysAtFill(l layout, k int, cells, x uint64) float64 {
	m := float64(cells)
	if l == layoutBlocked {
		m *= blockBits
	}
	xf := min(float64(x), m-0.5)
	empty := math.Log1p(-xf / m) // ln(1 − X/m) ≤ 0
	if l == layoutBlocked {
		return empty / math.Log1p(-blockedU(k)/float64(cells))
	}
	return empty / (float64(k) * math.Log1p(-1/m))
}

// fillAt returns the expected number of bits set by n distinct keys.
func fillAt(l layout, k int, cells uint64, n float64) float64 {
	m := float64(cells)
	if l == layoutBlocked {
		m *= blockBits
		return m * -math.Expm1(n*math.Log1p(-blockedU(k)/float64(cells)))
	}
	return m * -math.Expm1(float64(k)*n*math.Log1p(-1/m))
}

// blockedU returns u = 1 − (1 − 1/512)^k: the chance that one key sets a
// given bit of its block.
func blockedU(k int) float64 {
	return -math.Expm1(float64(k) * math.Log1p(-1.0/blockBits))
}

// rateAtFill returns the expected false-positive rate of a table with x
// bits set.
func rateAtFill(l layout, k int, cells, x uint64) float64 {
	if x == 0 {
		return 0
	}
	if l == layoutBlocked {
		return newBlockedModel(k).fpr(keysAtFill(l, k, cells, x) / float64(cells))
	}
	m := float64(cells)
	return probedRate(k, m, float64(x)/m)
}
