package table

// Semi-sorted buckets (Fan et al., CoNEXT 2014, section 5.2).
//
// A bucket of four f-bit fingerprints is stored sorted. Each fingerprint is
// split into its low 4 bits (its nibble) and its f-4 high bits. The four
// nibbles, sorted, form a multiset of 4 values out of 16: there are only
// C(19, 4) = 3876 such multisets, so a 12-bit code names them, 4 bits less
// than the 16 the nibbles take as they are. A bucket is then
//
//	bit 0            12          12+w        12+2w       12+3w       12+4w
//	| nibble code    | high 0    | high 1    | high 2    | high 3    |
//	  12 bits          w = f-4 bits each, in the order of the sorted nibbles
//
// 4f-4 bits for 4 fingerprints: one bit per item less than a plain bucket,
// for the same false-positive rate (the fingerprints are the same). The
// four (nibble, high) pairs are kept in increasing order of (nibble, high),
// which makes the encoding of a bucket's contents unique. An empty slot is
// the pair (0, 0) and sorts first.
//
// Lookups decode the code with a 4096-entry table (8 KiB, in L1 cache). When
// the high parts have 4 bits or more (f >= 8), they place nibble j in the
// low bits of high part j's lane and compare both in one SWAR step: a lane
// is zero where nibble and high part match, one step where gathering a
// mask of nibble matches and one of high-part matches would take several.
// Mutations decode
// the whole bucket, change it, sort and re-encode.

// ssCodes is the number of sorted 4-nibble multisets.
const ssCodes = 3876

// ssDecode maps a code to its four sorted nibbles, nibble j in bits 4j..4j+3.
// Entries at and past ssCodes are 0; the decoder rejects such codes, and the
// array has 4096 entries so that indexing with a 12-bit value needs no
// bounds check.
var ssDecode [4096]uint16

// ssCount[k][v] is the number of non-decreasing sequences of length k with
// values in [v, 15]: C(15-v+k, k). ssBefore[k][v] is Σ ssCount[k][u] over
// u < v: how many sequences of length k+1 (from 0) start below v.
var (
	ssCount  [4][17]uint16
	ssBefore [4][17]uint16
)

func init() {
	for v := 0; v <= 16; v++ {
		ssCount[0][v] = 1
	}
	for k := 1; k < 4; k++ {
		for v := 15; v >= 0; v-- {
			// Sequences starting with v, plus those starting above v.
			ssCount[k][v] = ssCount[k-1][v] + ssCount[k][v+1]
		}
	}
	for k := 0; k < 4; k++ {
		for v := 1; v <= 16; v++ {
			ssBefore[k][v] = ssBefore[k][v-1] + ssCount[k][v-1]
		}
	}
	// Codes in lexicographic order of the sorted nibbles: ssRank inverts this.
	code := 0
	for a := 0; a < 16; a++ {
		for b := a; b < 16; b++ {
			for c := b; c < 16; c++ {
				for d := c; d < 16; d++ {
					ssDecode[code] = uint16(a | b<<4 | c<<8 | d<<12)
					code++
				}
			}
		}
	}
}

// ssRank returns the code of four sorted nibbles (n[0] <= ... <= n[3]): the
// number of sorted multisets that precede it in lexicographic order.
func ssRank(n [4]uint64) uint64 {
	// At each position, count the sequences that agree so far and then
	// take a smaller value there (at least the previous one).
	return uint64(ssBefore[3][n[0]&15]) +
		uint64(ssBefore[2][n[1]&15]-ssBefore[2][n[0]&15]) +
		uint64(ssBefore[1][n[2]&15]-ssBefore[1][n[1]&15]) +
		uint64(ssBefore[0][n[3]&15]-ssBefore[0][n[2]&15])
}

// semiLayout sets up t for semi-sorted buckets of 4 fingerprints of FPBits.
func (t *Table) semiLayout() {
	w := t.FPBits - 4
	t.Semi = true
	t.Aligned = false
	t.BucketBits = 12 + 4*w
	t.highBits = w
	t.highMask = 1<<w - 1
	if w > 0 {
		t.highLow, t.highHigh, t.highRest = LaneMasks(4, w)
	}
	t.SemiOneWindow = t.BucketBits <= 64
}

// semiKey orders fingerprints by nibble, then high part.
func semiKey(fp uint64) uint64 { return (fp&15)<<32 | fp>>4 }

// semiMatches returns a 4-bit mask of the slots of semi-sorted bucket i
// that hold fp (with fp == 0: the empty slots).
func (t *Table) semiMatches(i, fp uint64) uint64 {
	p := i * t.BucketBits
	if t.SemiOneWindow {
		return t.semiMatchWindow(t.Window(p), fp)
	}
	w := t.Window(p)
	nm := semiNibbleMatches(w, fp)
	qh := fp >> 4
	var hm uint64
	for j := uint64(0); j < 4; j++ {
		if t.Window(p+12+j*t.highBits)&t.highMask == qh {
			hm |= 1 << j
		}
	}
	return nm & hm
}

// semiMatchWindow is semiMatches for a bucket of at most 64 bits whose
// window w the caller has read.
func (t *Table) semiMatchWindow(w, fp uint64) uint64 {
	nm := semiNibbleMatches(w, fp)
	if t.highBits == 0 {
		return nm
	}
	return nm & t.semiHighMatches(w, fp)
}

// SemiHasEither reports whether either of two buckets of at most 64 bits,
// whose windows x and y the caller has read, holds fp. A lookup reads both
// of a key's buckets before it decodes either, and decodes them in one
// body, so that their cache misses overlap as a plain lookup's do.
func (t *Table) SemiHasEither(x, y, fp uint64) bool {
	if t.highBits >= 4 {
		// Spread each bucket's nibbles into the lanes of its high parts
		// and compare both at once: a lane is zero where nibble and high
		// part both match. This saves gathering two 4-bit masks per bucket.
		hq, nq := (fp>>4)*t.highLow, (fp&15)*t.highLow
		dx := (x>>12 ^ hq) | (t.semiSpread(x) ^ nq)
		dy := (y>>12 ^ hq) | (t.semiSpread(y) ^ nq)
		return ZeroLanes(dx, t.highRest, t.highHigh)|ZeroLanes(dy, t.highRest, t.highHigh) != 0
	}
	nx, ny := semiNibbleMatches(x, fp), semiNibbleMatches(y, fp)
	if t.highBits != 0 {
		nx &= t.semiHighMatches(x, fp)
		ny &= t.semiHighMatches(y, fp)
	}
	return nx|ny != 0
}

// semiSpread returns the four nibbles of the bucket starting at w's bit 0
// (of at most 64 bits), nibble j in the low 4 bits of lane j of highBits
// bits (highBits >= 4, so that a nibble fits its lane).
func (t *Table) semiSpread(w uint64) uint64 {
	n, hb := uint64(ssDecode[w&0xfff]), t.highBits
	return n&15 | (n>>4&15)<<hb | (n>>8&15)<<(2*hb) | (n>>12)<<(3*hb)
}

// semiHighMatches returns the 4-bit mask of the slots of the bucket
// starting at w's bit 0 (of at most 64 bits) whose high part is fp's.
func (t *Table) semiHighMatches(w, fp uint64) uint64 {
	hb := t.highBits
	hz := ZeroLanes(w>>12^(fp>>4)*t.highLow, t.highRest, t.highHigh) >> (hb - 1)
	return hz&1 | hz>>(hb-1)&2 | hz>>(2*hb-2)&4 | hz>>(3*hb-3)&8
}

// semiNibbleMatches returns the 4-bit mask of the slots of the bucket
// starting at w's bit 0 whose nibble is fp's.
func semiNibbleMatches(w, fp uint64) uint64 {
	nibs := uint64(ssDecode[w&0xfff])
	z := ZeroLanes(nibs^(fp&15)*0x1111, 0x7777, 0x8888)
	return z>>3&1 | z>>6&2 | z>>9&4 | z>>12&8
}

// semiRead returns the four fingerprints of semi-sorted bucket i, sorted.
func (t *Table) semiRead(i uint64) [4]uint64 {
	p := i * t.BucketBits
	w := t.Window(p)
	nibs := uint64(ssDecode[w&0xfff])
	var v [4]uint64
	for j := uint64(0); j < 4; j++ {
		var high uint64
		if t.SemiOneWindow {
			high = w >> (12 + j*t.highBits) & t.highMask
		} else {
			high = t.Window(p+12+j*t.highBits) & t.highMask
		}
		v[j] = nibs>>(4*j)&15 | high<<4
	}
	return v
}

// semiWrite sorts v and stores it as semi-sorted bucket i.
func (t *Table) semiWrite(i uint64, v [4]uint64) {
	// A sorting network for four: five compare-exchanges.
	for _, pair := range [5][2]int{{0, 1}, {2, 3}, {0, 2}, {1, 3}, {1, 2}} {
		a, b := pair[0], pair[1]
		if semiKey(v[a]) > semiKey(v[b]) {
			v[a], v[b] = v[b], v[a]
		}
	}
	p := i * t.BucketBits
	code := ssRank([4]uint64{v[0], v[1], v[2], v[3]})
	if t.SemiOneWindow {
		// The whole bucket fits one word: assemble it and write it once.
		b := code
		for j := uint64(0); j < 4; j++ {
			b |= v[j] >> 4 << (12 + j*t.highBits)
		}
		StoreBits(t.Words, p, 1<<t.BucketBits-1, b)
		return
	}
	StoreBits(t.Words, p, 0xfff, code)
	for j := uint64(0); j < 4; j++ {
		StoreBits(t.Words, p+12+j*t.highBits, t.highMask, v[j]>>4)
	}
}

// semiReplace replaces one copy of old by new in semi-sorted bucket i.
func (t *Table) semiReplace(i, old, new uint64) bool {
	v := t.semiRead(i)
	for j := range v {
		if v[j] == old {
			v[j] = new
			t.semiWrite(i, v)
			return true
		}
	}
	return false
}

// SemiValid reports whether semi-sorted bucket i is in canonical form: a
// code that names a multiset, and (nibble, high) pairs in increasing order.
func (t *Table) SemiValid(i uint64) bool {
	if t.Window(i*t.BucketBits)&0xfff >= ssCodes {
		return false
	}
	v := t.semiRead(i)
	for j := 1; j < 4; j++ {
		if semiKey(v[j-1]) > semiKey(v[j]) {
			return false
		}
	}
	return true
}
