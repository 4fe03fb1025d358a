// Package cuckoo is a cuckoo filter: a compact, approximate set of keys that
// answers "have I seen this before?" in a few nanoseconds, never forgets a
// key it holds, can delete keys and count repeats, and saves to a
// checksummed file.
//
// It is for crawler URL dedup, guards that keep lookups of absent keys away
// from a database, event-stream dedup and blacklists: anywhere a "probably
// yes / certainly no" answer in a few bytes per key beats an exact set of
// the keys themselves. For an exact answer use package store of this
// module (a key-value store with a cuckoo index in RAM over a log on disk);
// for a filter without deletes at false-positive rates above about 3 %, or
// with lock-free concurrent inserts, the bloom package is smaller or
// simpler; to share one filter between processes, cuckoo serve (package
// server) or a filter in Redis (package redisfilter).
//
// # Guarantees
//
//   - No false negatives. A key added and not deleted is always found: after
//     any number of failed inserts, with any number of duplicates, after a
//     round trip through MarshalBinary or WriteTo.
//   - A failed Add leaves the filter exactly as it was; past its capacity,
//     Add returns [ErrFull] once no chain of displacements can free a slot.
//   - New(n) has room for n distinct keys. It sizes the table a margin below
//     the load where inserts start to fail, wider for small tables: for
//     each n of 1, 2, 3, 7, 100 and 1000 and each bucket size, none of
//     20,000 filters with different seeds refused one of its n keys
//     (TestNewHoldsItsCapacityAtEverySeed; TestBucketCapacityHolds for sizes other
//     than 2, 4 and 8, with CUCKOO_LONG=1). A cuckoo filter can only make this
//     unlikely, not impossible, and 2-slot buckets have the longest tail
//     (measured: one filter of 300 keys in 20,000 could not place its
//     last keys whatever it moved), so prefer 4 slots for small filters.
//   - Each of the first two copies of a key takes a slot like a distinct key
//     (the third and later are counted beside the table): a filter of
//     capacity n given every key twice may refuse one before n keys.
//   - False positives at the rate of the table below: Contains reports a key
//     never added with probability about 2·b·load/2^f.
//   - Add is a multiset insert without limit: a key added a million times is
//     counted a million times, takes two slots, and needs a million Deletes.
//   - Memory is capacity × f / load bits, with no rounding to a power of
//     two: 10 million keys at 0.19 % take 15.8 MB.
//
// # Choosing parameters
//
// Give [New] the number of distinct keys the filter must hold (its
// capacity) and either the false-positive rate you can accept
// ([WithFalsePositiveRate]) or a fingerprint width ([WithFingerprintBits]);
// the default is 16 bits, 0.012 %. The false-positive rate halves with every
// fingerprint bit, which costs 1/load bits per key. Buckets of 4 slots (the
// default) are the best trade-off; 8 slots fill fuller but compare twice as
// many fingerprints, so they need one more bit for the same rate; 2 slots
// only pay at small fingerprints. Semi-sorted buckets ([WithSemiSorting],
// "4ss" below) save one bit per key at the same rate, for slower inserts
// and lookups about 1.7 times as long. [NewPlan] computes all of this
// without building a filter. For 10 million keys:
//
//	b     f   load  bits/item  false positives at capacity
//	2     4   0.33      12.12  8.7 %         (1 in 11)
//	2     6   0.74       8.11  4.6 %         (1 in 22)
//	2     8   0.84       9.52  1.3 %         (1 in 76)
//	2     10  0.85      11.77  0.33 %        (1 in 301)
//	2     12  0.85      14.12  0.083 %       (1 in 1205)
//	2     14  0.85      16.47  0.021 %       (1 in 4819)
//	2     16  0.85      18.82  0.0052 %      (1 in 19277)
//	2     20  0.85      23.53  0.00032 %     (1 in 308427)
//	2     24  0.85      28.24  0.00002 %     (1 in 4934837)
//	2     32  0.85      37.65  0.000000079 % (1 in 1263318245)
//
//	4     4   0.80       5.00  36 %          (1 in 3)
//	4     6   0.88       6.82  11 %          (1 in 9)
//	4     8   0.94       8.51  2.9 %         (1 in 34)
//	4     10  0.95      10.53  0.74 %        (1 in 135)
//	4     12  0.95      12.63  0.19 %        (1 in 539)
//	4     14  0.95      14.74  0.046 %       (1 in 2156)
//	4     16  0.95      16.84  0.012 %       (1 in 8624)
//	4     20  0.95      21.05  0.00072 %     (1 in 137975)
//	4     24  0.95      25.26  0.000045 %    (1 in 2207590)
//	4     32  0.95      33.69  0.00000018 %  (1 in 565142964)
//
//	8     4   0.88       4.55  62 %          (1 in 2)
//	8     6   0.95       6.32  22 %          (1 in 5)
//	8     8   0.97       8.25  5.9 %         (1 in 17)
//	8     10  0.97      10.31  1.5 %         (1 in 66)
//	8     12  0.97      12.37  0.38 %        (1 in 264)
//	8     14  0.97      14.43  0.095 %       (1 in 1056)
//	8     16  0.97      16.50  0.024 %       (1 in 4223)
//	8     20  0.97      20.62  0.0015 %      (1 in 67565)
//	8     24  0.97      24.74  0.000093 %    (1 in 1081032)
//	8     32  0.97      32.99  0.00000036 %  (1 in 276744071)
//
//	4ss   9   0.95       8.42  1.5 %         (1 in 68)
//	4ss   13  0.95      12.63  0.093 %       (1 in 1078)
//	4ss   17  0.95      16.84  0.0058 %      (1 in 17247)
//	4ss   21  0.95      21.05  0.00036 %     (1 in 275949)
//
// (Regenerate with go run sizing_gen.go.) The load is what New sizes for:
// safely below where inserts start to fail, which is why capacity keys
// always fit. Fingerprints under 8 bits leave a key few places to move to,
// so those tables are sized emptier; 2-slot buckets of 4- and 5-bit
// fingerprints fill ever less as they grow, so New refuses them past 2^27
// and 2^28 keys a table or segment ([WithFalsePositiveRate] takes wider
// fingerprints there; growing filters take them at any size). New may add
// a few buckets to the count the load gives, so that the table fills
// evenly ([Plan] reports the count).
// The rate is measured within a few percent of these figures
// (TestFalsePositiveRate).
//
// # Speed
//
// Nanoseconds per operation with 16-byte random keys, hashing included,
// medians of 3 runs of the bench module on 2 cores (AMD EPYC),
// go1.26.8, commit a5ec3ba (docs/benchmarks.md has every row, the peers and
// the method; the bench module's -report writes the table here, given
// -doc and this file's path):
//
//	setting (4-slot buckets)      bits/item  FPR       10^6: add  hit  miss   10^7: add  hit  miss
//	f=8                             8.59      2.9 %            34   13    12         110   54    51
//	f=12                           12.68      0.19 %           48   24    22         156   86    92
//	f=16 (default)                 16.95      0.012 %          39   14    13         137   61    70
//	f=13 semi-sorted               12.69      0.092 %         150   29    28         323  120   114
//	f=16, AddHash/ContainsHash     16.96      0.012 %          34    8     8         124   44    45
//	f=16, AddBatch/ContainsBatch   16.96      0.012 %          39   16    16          57   25    24
//
// "add" fills an empty filter to its capacity, so it includes the
// displacements of the last, fullest part. A lookup is two bucket reads
// and costs the same for present and absent keys; while the table fits
// in the CPU caches it costs little more than hashing the key, beyond them
// it is one or two cache misses, which the batch methods overlap (see
// Large filters). Semi-sorted buckets save a bit per key for slower
// lookups and inserts. Longer keys cost their hashing and reading
// (docs/benchmarks.md has rows for URL-like keys of about 60 bytes).
//
// # Duplicates and deletes
//
// [Filter.Add] stores one more copy of a key each time; [Filter.AddUnique]
// adds only when [Filter.Contains] says no, for set semantics (a false
// positive then skips a new key, at the rate above). Copies beyond the
// second of a fingerprint in its bucket pair are counted beside the table,
// so hot keys cost a few bytes, not slots. [Filter.Count] is never below the
// true number of copies.
//
// Delete only keys that were added. A filter cannot tell a key from another
// with the same fingerprint and buckets, so deleting a key that was never
// added removes that other key's fingerprint (with the false-positive
// probability), and it then reads as absent.
//
// # Concurrency
//
// A [Filter] is like a Go map: any number of goroutines may call its read
// methods (Contains, Count, Len, MarshalBinary, WriteTo, …) at once, but a
// mutation (Add, Delete, Reset, UnmarshalBinary, ReadFrom) needs exclusive
// access.
//
// # Hashing and seeds
//
// Each key is hashed once with XXH3-64 (the xxHash project's 64-bit hash,
// which passes the SMHasher suite) with a 64-bit seed; the bucket comes from
// its upper half and the fingerprint from its lower half. Integer keys
// ([Filter.AddUint64] and the like) are hashed as their 8 little-endian
// bytes, the same key as those bytes given to [Filter.Add].
//
// What the seed buys: keys that differ collide in the hash only by chance,
// whatever their structure (lengths, shared prefixes, counters), so the
// false-positive rates above hold for any honest keys; and an adversary who
// does not know the seed cannot aim keys at chosen buckets. Every filter
// draws a random seed unless [WithSeed] fixes one, and saves it with the
// filter. What it does not buy: XXH3 is not a keyed pseudo-random function,
// so anyone who knows the seed (from a filter file, say) can craft keys that
// collide with a given key or fill a bucket pair. Keep the seed as private as
// the filter. Callers that already hold a good 64-bit hash of their keys can
// skip hashing with [Filter.AddHash], [Filter.ContainsHash],
// [Filter.DeleteHash] and [Filter.CountHash].
//
// # Large filters
//
// Once a table outgrows the CPU caches (tens of megabytes), a lookup is two
// independent cache misses, and one-at-a-time calls wait for each. The
// batch methods [Filter.ContainsBatch], [Filter.ContainsHashBatch],
// [Filter.AddBatch] and [Filter.AddUniqueBatch] run groups of keys through a
// pipeline that prefetches the buckets of the next group while it probes
// the current one, so the misses of many keys overlap; [Scalable] and
// [Concurrent] have the same batch methods. [Filter.DeleteBatch] and the
// other hash batches complete the set (docs/api.md), as loops of single
// calls. Tables of 4 MiB or more also
// ask Linux for transparent huge pages (madvise), which cuts TLB misses.
// An insert puts a key's fingerprint in the emptier of its two buckets,
// which keeps bucket loads even, and when both are full searches for a
// free slot breadth-first, a level of buckets at a time with each level
// prefetched. docs/benchmarks.md has the figures at 10^8 keys.
//
// A loop of one-at-a-time [Filter.ContainsHash] calls
// keeps more lookups' misses in flight when the call is inlined into it,
// which Go's inliner does only with a profile: build the program with
// profile-guided optimisation (a CPU profile of a typical run saved as
// default.pgo in the main package's directory; go build then uses it), and
// check with go build -gcflags=-m that the call site reports "inlining call
// to cuckoo.(*Filter).ContainsHash". docs/benchmarks.md has what it gains.
//
// # Forgetting old keys
//
// A [Window] holds the keys added within its window ("seen in the last 24
// hours") and forgets older ones, in one table whose slots carry a 4-bit
// age beside the fingerprint: a lookup reads two buckets, as here, and
// expired slots are free for new keys. [NewWindow] takes the keys a window
// holds and the window; a key is found for at least the window after it
// was last added and never more than about a fourteenth of it longer (an
// eleventh with the default clock: [Window.Granularity]). docs/window.md
// explains it and measures it.
//
// # Persistence
//
// [Filter.MarshalBinary] and [Filter.WriteTo] write a versioned,
// little-endian encoding with the parameters, seed, table and duplicate
// counters, closed by a CRC-32C; the same state always gives the same
// bytes. [Filter.UnmarshalBinary] and [Filter.ReadFrom] check everything
// and return an error wrapping [ErrCorrupt] for damaged, truncated or
// foreign input, never a panic and never an allocation the input cannot
// back. docs/format.md in the repository describes the format for readers
// in other languages.
package cuckoo
