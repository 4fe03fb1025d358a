// Package bloom provides Bloom filters: compact sets of keys that answer
// "certainly absent" or "probably present". A key that was added is always
// found; a key that was not is reported present with a small probability,
// the false-positive rate. Every constructor takes a capacity and a target
// rate ([WithFalsePositiveRate]; [DefaultFalsePositiveRate], the rate of
// a cuckoo filter with default options, when not given), and the rate
// measured at that capacity meets the target (the tests check it within
// 15 % over millions of absent keys; it comes out within a few percent of
// it). The names are those of the cuckoo package (docs/api.md):
// AddUnique, WithFalsePositiveRate, NumTables.
//
// # Which filter
//
//   - [New] builds a blocked Bloom filter: a [Filter] whose keys each set
//     their bits in one 64-byte block, so that an operation costs one hash
//     and one cache line. The default choice.
//   - [NewClassic] builds a classic Bloom filter: a [Filter] whose keys set
//     their bits anywhere in the array. It needs the fewest bits for a rate
//     (3 % fewer than New at 1 %, 13 % at 0.01 %, 26 % at 1e-6) but an
//     operation touches up to k cache lines.
//   - [NewCounting] builds a [Counting] filter, with 4-bit counters instead
//     of bits, so that keys can be deleted; it takes four times the memory
//     of NewClassic.
//   - [NewScalable] builds a [Scalable] filter, which adds layers as keys
//     arrive, for when their number is not known in advance; its rate stays
//     at or below the target at every size.
//
// # Bloom filter or cuckoo filter?
//
// The module's root package, github.com/dedupkit/cuckoo, is a cuckoo
// filter: it deletes keys, counts duplicates, and stores a fingerprint per
// key. Choose a Bloom filter from this package when:
//
//   - Keys are never deleted. The cuckoo filter's deletes are its main
//     advantage; a [Counting] filter deletes too, but at four times the
//     memory of a cuckoo filter.
//   - The rate may be a few percent or more. A Bloom filter needs about
//     1.44·log2(1/p) bits per key, a 4-slot cuckoo filter (log2(1/p) + 3)
//     bits divided by its load of 0.95: the Bloom filter is smaller above
//     about 1 %, the cuckoo filter below (table below).
//   - Many goroutines insert at once. A [Filter] takes concurrent Adds and
//     Contains without a lock (atomic OR on 64-bit words), while a cuckoo
//     filter's inserts move fingerprints between buckets and need exclusive
//     access.
//   - An insert must never fail. A Bloom filter past its capacity still
//     takes keys, its rate rising gradually ([Filter.FalsePositiveRate]
//     reports it), while a cuckoo filter refuses keys once its buckets are
//     full; a [Scalable] filter never fills.
//
// Bits per key at the same target (the cuckoo filter at its capacity, with
// the fingerprint width its sizing picks for the rate, and the rate that
// width delivers):
//
//	target   New    NewClassic   cuckoo, 4-slot buckets
//	3 %       7.4    7.3          8.5  (8-bit fingerprints, 2.9 %)
//	1 %       9.9    9.6         10.5 (10-bit, 0.74 %)
//	0.1 %    15.6   14.4         13.7 (13-bit, 0.093 %)
//	0.01 %   22.0   19.2         17.9 (17-bit, 0.0058 %)
//
// Speed hardly decides between them: lookups and inserts in New take
// about what the cuckoo filter's take, and New is several times faster
// than the classic layout of other Go Bloom libraries at the same rate;
// docs/benchmarks.md ("Bloom filters") has the measured times.
//
// # Sizing
//
// [NewPlan], [NewClassicPlan], [NewCountingPlan] and [NewScalablePlan]
// tell what a constructor would build — memory, hash count, layers and the
// expected rate — without allocating it, with the constructors' own
// sizing.
//
// Bits per key and hash count k for each constructor, computed from the
// constructors at a capacity of 10^6 (go run sizing_gen.go regenerates the
// table; a test checks that it is current). The Scalable columns hold its
// default growth 2 and tightening 0.8: "1×" is a filter holding its
// initial capacity, "1000×" one grown to 1000 times it (ten layers).
//
//	rate      New          NewClassic   NewCounting  NewScalable
//	          bits/key  k  bits/key  k  bits/key     1×     1000×
//	10 %        4.84   3    4.81   3   19.23     8.37   12.85
//	3 %         7.43   5    7.30   5   29.20    11.12   15.98
//	1 %         9.92   6    9.59   7   38.37    13.81   19.03
//	0.1 %      15.55   9   14.38  10   57.51    20.01   26.21
//	0.01 %     22.03  12   19.17  13   76.69    27.29   27.18
//	0.001 %    29.67  14   23.97  17   95.88    27.38   32.25
//	0.0001 %   38.82  16   28.77  20  115.09    32.24   39.46
//
// The classic filter starts from the textbook optimum m = −n·ln p/ln²2,
// k = (m/n)·ln 2. Both layouts are then sized with the exact expected rate
// rather than the textbook's (1 − e^(−kn/m))^k: an absent key's k bit
// positions may repeat, and, for the blocked layout, blocks receive unequal
// numbers of keys (a Poisson spread around the mean), which raises the rate
// far above what the textbook formula predicts from the mean load: at
// 0.01 % by a factor of 3.3. The blocked model sums, over the number of
// keys j in a block, the Poisson weight of j times the exact chance that k
// independent positions all hit bits that j keys set (a small dynamic
// program); it agrees with simulation within 0.5 %
// (TestBlockedModelMonteCarlo). The filters it sizes deliver their target:
// measured at 10^6 keys over 10^6 to 2·10^7 absent keys, New, NewClassic
// and NewCounting come out between 0.95 and 1.05 times targets from 10 %
// down to 0.01 % (the measurement itself varies by 2–3 %;
// TestFalsePositiveRate logs the figures of each run), and a Scalable
// filter grown 1000× measures about 0.9 times its target. The classic and
// counting layouts derive their k positions by double hashing, which adds
// about 2.2/(k·m) to the rate of independent positions whatever k is (a
// key whose step between positions is near r/q of the table probes only q
// cells); their sizing adds twice that term, which matters only for small
// tables at low rates: at 0.001 %, 30 keys take 41 words instead of 12
// (which measured 20 times the target), 300 keys 50 % more, 3,000 keys 4 %
// more, 10^6 keys 0.01 % more (TestFalsePositiveRateSmallTables). In the Scalable columns, 1000× can cost less per key than 1×
// where later layers, at tighter rates, switch to the classic layout.
//
// [Filter.FalsePositiveRate] applies the same model to the bits actually
// set, and [Filter.EstimatedCount] inverts the expected fill (the estimator
// of Swamidass and Baldi, extended to blocks): within 0.3 % of the true
// count up to twice the capacity in the tests.
//
// # Hashing
//
// Each key is hashed once, with a seeded 64-bit hash (the module's
// internal/hash). The blocked layout takes the block from the high bits of
// a multiply-shift reduction of the hash, and k bit positions of 9 bits
// each from a stream of remixed 64-bit words, so that positions are
// independent of the block and of each other; the classic layout derives
// its k positions by enhanced double hashing. The seed is random unless
// [WithSeed] fixes it, so that an adversary who cannot read a filter cannot
// craft keys that collide in it; filters to be merged with Union need the
// same seed, and [WithSeed] also makes results reproducible.
//
// # Concurrency
//
// A [Filter] may be used by any number of goroutines at once: Add,
// AddUnique, Contains, Union, Clone, the estimators and the encoders need
// no lock (bits are set with atomic OR and read with atomic loads); only
// Reset and the decoders need exclusive access. [Counting] and [Scalable]
// are like Go maps: concurrent lookups are safe, but any change needs
// exclusive access; [SyncCounting] and [SyncScalable] wrap them with a
// read-write mutex.
//
// # Encoding
//
// Every type implements encoding.BinaryMarshaler, encoding.BinaryAppender,
// encoding.BinaryUnmarshaler, io.WriterTo and io.ReaderFrom. The format
// (docs/format.md in the repository) has a magic number, a version, the
// parameters, the seed and a CRC-32C checksum; the same state always
// encodes to the same bytes. Decoding damaged or hostile input returns an
// error wrapping [ErrCorrupt], never panics, allocates no more than the
// input justifies, and leaves the receiver unchanged.
package bloom
