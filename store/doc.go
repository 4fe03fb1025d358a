// Package store is an exact key-value store: an append-only log of
// records on disk and, in RAM, a cuckoo hash table that holds for each
// key a short tag and the location of its record. A filter answers
// "certainly not" or "probably yes"; a Store answers exactly: the tags
// pick candidates, and the key in the log decides.
//
//	s, err := store.Open("data/seen")          // creates the directory
//	err = s.Put([]byte("https://a.example/"), []byte("visited 2026-11-23"))
//	v, err := s.Get([]byte("https://a.example/")) // or store.ErrNotFound
//	err = s.Close()
//
// # When to use it
//
// Use a Store when a filter's false positives are not acceptable and the
// keys do not fit in RAM as a Go map would hold them: a crawler's set of
// seen URLs that must never skip a new page, exact dedup of files far
// larger than memory (cuckoo dedup --exact), content-addressed chunks
// (cuckoo store import). Keys and values stay on disk (the operating
// system's page cache may hold them; the log is mapped for reading); the
// index takes about 9 bytes of RAM per key, whatever the key's length.
// Use the filters of the parent package when "probably" is enough: they
// take 1 to 3 bytes per key and no disk. Use an LSM tree (pebble) or a
// B-tree (bbolt) when you need ordered keys, range scans or transactions,
// which a Store does not have.
//
// # Costs
//
//   - Get of a present key: two probes of the index (two cache lines) and
//     one read of the log, whose checksum it checks. Get of an absent
//     key: two probes, and a read of the log in fewer than 0.1 % of
//     lookups (a tag of at least 15 bits must match by chance).
//   - Put and Delete: a lookup, then an append to a 1 MiB buffer
//     (SyncEverySecond, SyncNever) or a write and a shared sync
//     (SyncAlways). Overwrites and deletes leave garbage in the log,
//     reclaimed by Compact, automatically once more than half the log
//     (DefaultCompactRatio) is garbage and it holds 64 MiB.
//   - RAM: 8 bytes per index slot, at most 90 % of slots used, so about
//     8.9 bytes per key (at most 8.97 measured from 10^6 to 10^7 keys);
//     the index grows one bucket at a time, holding readers off for one
//     bucket's split (a few hundred ns), and its rare rebuilds (at about
//     2.4·10^5 and 6·10^7 keys) are built beside it while readers go on.
//   - Disk: a record is the key, the value and 11 to 20 bytes
//     (checksum, sizes, kind, sequence number).
//   - Checkpoints: the index is written to disk in the background once
//     the records written since the last checkpoint reach keys/16 (and
//     at least 262,144), after each compaction and at Close: about 9
//     bytes per key each time, so at most about 145 bytes per record
//     written (WithCheckpoints trades this against recovery).
//   - Open reads the last checkpoint and replays the records written
//     after it: none after a Close; after a crash, at most about keys/16
//     (docs/store.md has the figures at 3·10^6 and 10^7 keys), and
//     checks 64 entries of the checkpoint against their records. Damage
//     that Open does not read is reported by Get, by Verify and by
//     'cuckoo store check'.
//   - Verify reads the whole log, and builds the index it gives to
//     compare with the store's: about what Open without a checkpoint
//     costs, and a second index in RAM meanwhile.
//
// # Durability
//
// Every record carries a CRC-32C, and the manifest records the length and
// checksum of every sealed log file (all but the active one). SyncPolicy
// says what a crash can lose; the default, SyncEverySecond, loses at
// most about the last second of writes, SyncAlways nothing that was
// acknowledged (concurrent writers share each sync). After a crash Open
// cuts a last record written after the last checkpoint that fails its
// checksum as a torn write (short, zeros or garbage at its end), unless
// it verifies with one bit flipped back (its checksum, size field or
// data): that is damage. A sealed log file of another length than
// recorded, a log file shorter than the checkpoint recorded, and any
// damaged record Open reads, the last one included when one flipped bit
// explains it, are ErrCorrupt with the file and offset, and Open changes
// nothing: no record damaged in one bit is dropped silently. Repair
// (cuckoo store repair) cuts such damage from the tail of the last log
// file, after copying the bytes it cuts to a file beside it, and refuses
// damage a cut does not repair.
// The index checkpoint (INDEX) is a cache: Open does not use one that
// is damaged or cut, nor one whose checksum passes (a bug wrote it, or
// memory was damaged before it was) but an entry of which points outside
// the log, or, among the 64 it samples, at a tombstone or at the record
// of a key whose hash does not give the entry. It reads the whole log
// instead, and Stats().CheckpointUnused says why. An entry that the
// sample missed and that points at the record of another key is found
// by the lookups that reach it: Get, Has, Put, PutIfAbsent and Delete of
// the key it stands for return a *CorruptError saying that the index is
// wrong, not the log, never a false "absent", and the writes change
// nothing (no key lost, none stored twice). Verify checks every entry
// against the log, and so finds too what no lookup can tell (an entry at
// an overwritten record of its key, a key with no entry). Closing the
// store, removing INDEX and opening it again rebuilds the index from
// the log; Repair does so.
// Compaction is atomic: a crash at any point leaves the old log or the
// new one. One process at a time may open a directory (a lock file,
// flock).
//
// # Limits
//
// Keys up to MaxKeySize (1 MiB), values up to MaxValueSize (64 MiB);
// ErrTooLarge beyond. The log is at most 256 log files (256 GiB at
// the default log file size of 1 GiB; WithLogFileSize from 4 KiB to 3
// GiB).
//
// # Concurrency
//
// A Store is safe for concurrent use: any number of goroutines may read
// while others write. Writes are serialized; reads run in parallel and
// are held off only for the moment a write changes the index.
//
// # Files
//
// The directory holds LOCK, MANIFEST (the log files, with the length
// and checksum of the sealed ones; replaced atomically), the log files,
// NNNNNNNNNNNNNNNN.log, and INDEX, the last index checkpoint. log.go,
// manifest.go and checkpoint.go draw the formats; a store written by the
// first version (format 1) is read and upgraded.
package store
