package server

// The key space maps keys to objects. It is split into shards, each a map
// behind its own read-write mutex, and every object has a read-write mutex
// of its own, so that commands on different keys never wait for each
// other: a lookup holds a shard's read lock only for the map access, and
// the command then holds the key's own lock while it runs.
//
// # How writes, the log and snapshots stay consistent
//
// A write command locks its object for writing, reads the snapshot epoch,
// changes the filter, appends its log record tagged with that epoch, and
// only then unlocks. So the log holds each key's writes in the order they
// ran, and a replay reproduces every key's state exactly (the filters are
// deterministic for a given seed, and a creation is logged with its seed).
//
// A snapshot of epoch E starts by switching the log to a new file and then
// raising the epoch to E (in that order, see aof.rotate). From then on the
// first write to each object that existed before copies the object into the
// snapshot before changing it (copy on write), and a background scan copies
// every object no write has copied yet. Each object is copied once, under
// its lock, as it was at the moment the epoch changed; object.snapEpoch
// records that it has been. Writes tagged E are not in the snapshot, and
// writes tagged E-1 are (even when they reached the new log file: the
// writer read the epoch under the object's lock, so the copy waited for
// it). Recovery loads the newest complete snapshot, of epoch S, and replays
// the log records tagged S or later, from every log file of epoch S or
// later. Keys created, deleted and renamed follow the same rule: creation
// reads the epoch under the shard's lock, and deletion copies the object
// first.

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dedupkit/cuckoo/internal/hash"
)

const numShards = 1024 // a power of two

type shard struct {
	mu sync.RWMutex
	m  map[string]*object
	_  [64]byte // keeps neighbouring shards' locks off one cache line
}

// keyspace is the set of keys and their objects.
type keyspace struct {
	shards [numShards]shard
	seed   uint64

	// epoch is the current snapshot epoch (see the file comment).
	epoch atomic.Uint64
	// snap is the snapshot being taken, or nil.
	snap atomic.Pointer[snapshotRun]

	used  atomic.Int64 // the objects' SizeInBytes, the pending loads and the dump copies, summed
	dumps dumpCopies   // the copies dumps in progress are served from (dump.go)
	count atomic.Int64 // keys
	dirty atomic.Bool  // a write since the last snapshot began

	growths [numFilterTypes]atomic.Int64 // tables added to growing filters, by type (Stats)
}

func newKeyspace() *keyspace {
	ks := &keyspace{seed: rand.Uint64()}
	ks.dumps.held = make(map[*object]struct{})
	ks.dumps.now = monotonicNow
	for i := range ks.shards {
		ks.shards[i].m = make(map[string]*object)
	}
	return ks
}

func (ks *keyspace) shardIndex(key []byte) int {
	return int(hash.Sum64(key, ks.seed) & (numShards - 1))
}

func (ks *keyspace) get(key []byte) *object {
	sh := &ks.shards[ks.shardIndex(key)]
	sh.mu.RLock()
	o := sh.m[string(key)]
	sh.mu.RUnlock()
	return o
}

// readLock returns key's object locked for reading, or nil when the key
// does not exist. A key of another kind gives errWrongType, unlocked.
func (ks *keyspace) readLock(key []byte, k kind) (*object, error) {
	for {
		o := ks.get(key)
		if o == nil {
			return nil, nil
		}
		if o.kind != k {
			return nil, errWrongType
		}
		o.mu.RLock()
		if !o.dead {
			return o, nil
		}
		o.mu.RUnlock() // removed meanwhile: look again
	}
}

// writeLock returns key's object locked for writing, with the epoch the
// write's log records are tagged with, after copying the object into a
// snapshot in progress if it is the first write to it since the snapshot
// began. It returns a nil object when the key does not exist, and
// errWrongType (nothing locked) for a key of another kind.
func (ks *keyspace) writeLock(key []byte, k kind) (*object, uint64, error) {
	for {
		o := ks.get(key)
		if o == nil {
			return nil, 0, nil
		}
		if o.kind != k {
			return nil, 0, errWrongType
		}
		o.mu.Lock()
		if o.dead {
			o.mu.Unlock()
			continue
		}
		epoch := ks.epoch.Load()
		ks.copyOnWrite(o, epoch)
		return o, epoch, nil
	}
}

// create adds fresh as key's object, locked for writing, and returns it
// with the epoch the creation is tagged with. It calls logf with that
// epoch before the key becomes visible, the shard still locked: a
// connection that sees the key (EXISTS, TYPE, KEYS take no lock of the
// key) has seen its creation appended to the log, so its reply waits
// for it (client.noteLog), and the record precedes those of any later
// write to the key. When the key exists already it returns the existing
// object instead, locked for writing as writeLock does, with created
// false (or errWrongType for another kind), and logs nothing.
func (ks *keyspace) create(key []byte, fresh *object, logf func(epoch uint64)) (o *object, epoch uint64, created bool, err error) {
	for {
		sh := &ks.shards[ks.shardIndex(key)]
		sh.mu.Lock()
		if old := sh.m[string(key)]; old != nil {
			sh.mu.Unlock()
			o, epoch, err = ks.writeLock(key, fresh.kind)
			if o == nil && err == nil {
				continue // deleted meanwhile
			}
			return o, epoch, false, err
		}
		fresh.name = string(key)
		fresh.mu.Lock()
		epoch = ks.epoch.Load()
		fresh.snapEpoch.Store(epoch)
		fresh.size = fresh.sizeInBytes()
		fresh.numTables = fresh.tableCount()
		logf(epoch)
		sh.m[fresh.name] = fresh
		ks.used.Add(fresh.size)
		ks.count.Add(1)
		sh.mu.Unlock()
		if hook := keyCreatedHook.Load(); hook != nil {
			(*hook)(key)
		}
		return fresh, epoch, true, nil
	}
}

// keyCreatedHook, when set (by tests), runs when create has made a new
// key visible to the lookups of other connections.
var keyCreatedHook atomic.Pointer[func(key []byte)]

// unlockWrite accounts the object's memory, and the tables a growing
// filter added (which changed its memory), and unlocks it.
func (ks *keyspace) unlockWrite(o *object) {
	if n := o.sizeInBytes(); n != o.size {
		ks.used.Add(n - o.size)
		o.size = n
		if t := o.tableCount(); t != o.numTables {
			ks.growths[o.filterType()].Add(int64(max(t-o.numTables, 0)))
			o.numTables = t
		}
	}
	o.mu.Unlock()
}

// copyOnWrite copies o into the snapshot of epoch, if one is being taken
// and o is not in it yet. The caller holds o.mu for writing.
func (ks *keyspace) copyOnWrite(o *object, epoch uint64) {
	if o.snapEpoch.Load() >= epoch {
		return
	}
	if run := ks.snap.Load(); run != nil && run.epoch == epoch {
		run.copy(o)
	}
	o.snapEpoch.Store(epoch)
}

// kill removes o from its shard's map, which the caller holds locked for
// writing, copying it into a snapshot in progress first, and frees the
// copy a dump of it was served from.
func (ks *keyspace) kill(sh *shard, o *object, epoch uint64) {
	o.mu.Lock()
	ks.copyOnWrite(o, epoch)
	o.dead = true
	delete(sh.m, o.name)
	ks.used.Add(-o.size)
	ks.count.Add(-1)
	o.dumpMu.Lock()
	ks.releaseDump(o)
	o.dumpMu.Unlock()
	o.mu.Unlock()
}

// lockShards locks the shards of keys for writing, in index order, and
// returns their indexes for unlockShards.
func (ks *keyspace) lockShards(keys [][]byte) []int {
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, ks.shardIndex(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		ks.shards[i].mu.Lock()
	}
	return idx
}

func (ks *keyspace) unlockShards(idx []int) {
	for _, i := range idx {
		ks.shards[i].mu.Unlock()
	}
}

// remove deletes the keys that exist and returns how many did. When any
// did, it calls logf with the epoch while the keys' shards are still
// locked, so that the record precedes those of any later write to them.
func (ks *keyspace) remove(keys [][]byte, logf func(epoch uint64)) int {
	idx := ks.lockShards(keys)
	defer ks.unlockShards(idx)
	epoch := ks.epoch.Load()
	n := 0
	for _, k := range keys {
		sh := &ks.shards[ks.shardIndex(k)]
		if o := sh.m[string(k)]; o != nil {
			ks.kill(sh, o, epoch)
			n++
		}
	}
	if n > 0 {
		logf(epoch)
	}
	return n
}

// rename moves src's object to dst, replacing any object there, and calls
// logf as remove does. It returns errNoSuchKey when src does not exist.
func (ks *keyspace) rename(src, dst []byte, logf func(epoch uint64)) error {
	idx := ks.lockShards([][]byte{src, dst})
	defer ks.unlockShards(idx)
	shSrc := &ks.shards[ks.shardIndex(src)]
	shDst := &ks.shards[ks.shardIndex(dst)]
	o := shSrc.m[string(src)]
	if o == nil {
		return errNoSuchKey
	}
	epoch := ks.epoch.Load()
	if bytes.Equal(src, dst) {
		logf(epoch)
		return nil
	}
	if old := shDst.m[string(dst)]; old != nil {
		ks.kill(shDst, old, epoch)
	}
	o.mu.Lock()
	ks.copyOnWrite(o, epoch)
	delete(shSrc.m, o.name)
	o.name = string(dst)
	shDst.m[o.name] = o
	o.mu.Unlock()
	logf(epoch)
	return nil
}

// flush removes every key and calls logf as remove does.
func (ks *keyspace) flush(logf func(epoch uint64)) {
	for i := range ks.shards {
		ks.shards[i].mu.Lock()
	}
	epoch := ks.epoch.Load()
	for i := range ks.shards {
		sh := &ks.shards[i]
		for _, o := range sh.m {
			ks.kill(sh, o, epoch)
		}
	}
	logf(epoch)
	for i := range ks.shards {
		ks.shards[i].mu.Unlock()
	}
}

// shardKeys returns the keys of shard i.
func (ks *keyspace) shardKeys(i int, dst []string) []string {
	sh := &ks.shards[i]
	sh.mu.RLock()
	for k := range sh.m {
		dst = append(dst, k)
	}
	sh.mu.RUnlock()
	return dst
}

// objects returns the objects of shard i.
func (ks *keyspace) objects(i int, dst []*object) []*object {
	sh := &ks.shards[i]
	sh.mu.RLock()
	for _, o := range sh.m {
		dst = append(dst, o)
	}
	sh.mu.RUnlock()
	return dst
}

// insertLoaded adds an object read from a snapshot or a dump, outside of
// any command: recovery only.
func (ks *keyspace) insertLoaded(name string, o *object) {
	sh := &ks.shards[ks.shardIndex([]byte(name))]
	sh.mu.Lock()
	if old := sh.m[name]; old != nil {
		ks.used.Add(-old.size)
		ks.count.Add(-1)
	}
	o.name = name
	o.snapEpoch.Store(ks.epoch.Load())
	sh.m[name] = o
	ks.used.Add(o.size)
	ks.count.Add(1)
	sh.mu.Unlock()
}
