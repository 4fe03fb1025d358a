package store

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/dedupkit/cuckoo/internal/invariants"
)

const (
	manifestName = "MANIFEST"
	lockName     = "LOCK"
)

// segPattern matches the names of segment files.
var segPattern = regexp.MustCompile(`^[0-9a-f]{16}\.log$`)

// ours reports whether a file name is one a Store writes in its
// directory. Open leaves every other file alone.
func ours(name string) bool {
	return name == manifestName || name == manifestName+".tmp" || name == lockName || name == idxName || name == idxName+".tmp" ||
		segPattern.MatchString(name)
}

// Open opens the store in dir, creating dir and an empty store if
// needed. Only one Store, in one process, can have a directory open: a
// second Open returns ErrLocked until the first is closed.
//
// After a Close, Open reads the index checkpoint Close wrote (the INDEX
// file: about 9 bytes per key) and the records written after it, if any.
// After a crash, or when the checkpoint does not match the log, it reads
// the whole log, verifying every record's checksum, and rebuilds the
// index: about the time of reading the log plus 1 to 4 µs per record on
// a 2-core VM (docs/store.md has figures). A torn record at the end of the last
// segment (a write cut short by a crash) is cut off. Any other damage
// found returns an error wrapping ErrCorrupt (a *CorruptError naming the
// file and offset) and opens nothing: no record
// is ever dropped silently. Files in dir that a Store does not write are
// left alone; segment files no manifest lists (left by a crash during a
// compaction) are removed.
func Open(dir string, opts ...Option) (*Store, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	s := &Store{dir: dir, fs: o.fs, opt: o, stop: make(chan struct{})}
	s.scond = sync.NewCond(&s.smu)
	if err := s.fs.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", dir, err)
	}
	lock, err := s.fs.Lock(filepath.Join(dir, lockName))
	if errors.Is(err, errLockHeld) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("store: locking %s: %w", dir, err)
	}
	s.lock = lock
	if err := s.load(); err != nil {
		s.closeFiles()
		lock.Close()
		return nil, err
	}
	if invariants.Enabled {
		if err := s.mu.ix.check(); err != nil {
			panic(err)
		}
	}
	if o.sync == SyncEverySecond {
		s.bg.Add(1)
		go s.syncLoop()
	}
	return s, nil
}

// closeFiles closes the segment files after a failed Open.
func (s *Store) closeFiles() {
	for _, sg := range s.mu.order {
		sg.f.Close()
	}
}

// load reads the manifest and the log, or creates a new store.
func (s *Store) load() error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", s.dir, err)
	}
	mpath := filepath.Join(s.dir, manifestName)
	raw, err := s.fs.ReadFile(mpath)
	if errors.Is(err, fs.ErrNotExist) {
		return s.create(names)
	}
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", mpath, err)
	}
	m, err := decodeManifest(raw)
	if err != nil {
		return &CorruptError{File: mpath, Detail: err.Error()}
	}
	s.seed, s.nextID = m.seed, m.nextID
	s.mu.ix = newIndex(s.seed)
	listed := map[string]bool{}
	for _, id := range m.ids {
		listed[segName(id)] = true
	}
	// Segments no manifest lists, and a manifest never renamed, are
	// what a crash left of a rotation or a compaction.
	for _, name := range names {
		if name == manifestName+".tmp" || name == idxName+".tmp" || segPattern.MatchString(name) && !listed[name] {
			if err := s.fs.Remove(filepath.Join(s.dir, name)); err != nil {
				return fmt.Errorf("store: removing %s: %w", name, err)
			}
		}
	}
	if len(m.ids) == 0 {
		return &CorruptError{File: mpath, Detail: "manifest lists no segment"}
	}
	for i, id := range m.ids {
		path := filepath.Join(s.dir, segName(id))
		f, err := s.fs.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return &CorruptError{File: path, Detail: "segment listed in the manifest is missing"}
		}
		if err != nil {
			return fmt.Errorf("store: opening %s: %w", path, err)
		}
		sg := &segment{id: id, slot: uint64(i), path: path, f: f}
		s.mu.order = append(s.mu.order, sg)
		s.mu.segs[i] = sg
		size, err := f.Size()
		if err != nil {
			return fmt.Errorf("store: reading %s: %w", path, err)
		}
		head := make([]byte, segHeaderSize)
		if size >= segHeaderSize {
			if _, err := f.ReadAt(head, 0); err != nil {
				return fmt.Errorf("store: reading %s: %w", path, err)
			}
		}
		gotID, seed, err := parseSegHeader(head[:min(size, segHeaderSize)])
		if err == nil && (gotID != id || seed != s.seed) {
			err = errors.New("segment header does not match the manifest")
		}
		if err != nil {
			return &CorruptError{File: path, Detail: err.Error()}
		}
		sg.size = size
		sg.data = f.Map(s.mapSize())
	}
	// From the checkpoint, if it matches the log, only the records after
	// it are read; else all of them.
	from := make([]int64, len(s.mu.order))
	for i := range from {
		from[i] = segHeaderSize
	}
	if ck, ix, ok := s.readCheckpoint(); ok {
		s.mu.ix, s.nextSeq, s.live = ix, ck.nextSeq, ck.live
		s.mu.segs = [maxSegments]*segment{}
		for i, sg := range s.mu.order {
			from[i] = int64(ck.sizes[i])
			sg.slot = ck.slots[i]
			s.mu.segs[sg.slot] = sg
		}
	}
	for i, sg := range s.mu.order {
		last := i == len(s.mu.order)-1
		end, err := s.replay(sg, from[i], last)
		if err != nil {
			return err
		}
		if end < sg.size {
			// A torn tail: cut it, so new records follow the intact ones.
			if err := sg.f.Truncate(end); err != nil {
				return fmt.Errorf("store: cutting the torn tail of %s: %w", sg.path, err)
			}
			if err := sg.f.Sync(); err != nil {
				return fmt.Errorf("store: syncing %s: %w", sg.path, err)
			}
			sg.size = end
		}
		s.logBytes += sg.size
	}
	return nil
}

// readCheckpoint reads the INDEX file, and reports whether it matches the
// log: the same segments, the sealed ones of the sizes it records, the
// last at least as long.
func (s *Store) readCheckpoint() (checkpoint, *index, bool) {
	raw, err := s.fs.ReadFile(filepath.Join(s.dir, idxName))
	if err != nil {
		return checkpoint{}, nil, false
	}
	ck, ix, err := decodeIndex(raw, s.seed)
	if err != nil || len(ck.ids) != len(s.mu.order) {
		return ck, nil, false
	}
	for i, sg := range s.mu.order {
		last := i == len(s.mu.order)-1
		if ck.ids[i] != sg.id || ck.sizes[i] < segHeaderSize || int64(ck.sizes[i]) > sg.size || !last && int64(ck.sizes[i]) != sg.size {
			return ck, nil, false
		}
	}
	return ck, ix, true
}

// writeCheckpoint writes the INDEX file for the log as it is. Call it
// with wmu held, everything written and synced. It is a cache: on an
// error, Open reads the log.
func (s *Store) writeCheckpoint() {
	ck := checkpoint{seed: s.seed, nextSeq: s.nextSeq, live: s.live}
	for _, sg := range s.mu.order {
		ck.ids = append(ck.ids, sg.id)
		ck.sizes = append(ck.sizes, uint64(sg.size))
		ck.slots = append(ck.slots, sg.slot)
	}
	tmp := filepath.Join(s.dir, idxName+".tmp")
	f, err := s.fs.Create(tmp)
	if err != nil {
		return
	}
	w := &fileWriter{f: f}
	err = encodeIndex(w, ck, s.mu.ix)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.fs.Rename(tmp, filepath.Join(s.dir, idxName))
	}
	if err != nil {
		s.fs.Remove(tmp)
		return
	}
	s.fs.SyncDir(s.dir)
}

// fileWriter writes a file from its start, in order.
type fileWriter struct {
	f   file
	off int64
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}

// create makes a new store in a directory that has no manifest: empty,
// or holding only what a crash during a create left (segments with no
// record).
func (s *Store) create(names []string) error {
	for _, name := range names {
		if !ours(name) {
			return fmt.Errorf("%w: %s holds %s", ErrNotStore, s.dir, name)
		}
	}
	for _, name := range names {
		if !segPattern.MatchString(name) && name != manifestName+".tmp" {
			continue
		}
		path := filepath.Join(s.dir, name)
		if segPattern.MatchString(name) {
			f, err := s.fs.Open(path)
			if err != nil {
				return fmt.Errorf("store: opening %s: %w", path, err)
			}
			size, err := f.Size()
			f.Close()
			if err != nil {
				return fmt.Errorf("store: reading %s: %w", path, err)
			}
			if size > segHeaderSize {
				return &CorruptError{File: filepath.Join(s.dir, manifestName), Detail: "missing, and " + name + " holds records"}
			}
		}
		if err := s.fs.Remove(path); err != nil {
			return fmt.Errorf("store: removing %s: %w", path, err)
		}
	}
	s.seed = s.opt.seed
	if !s.opt.seedSet {
		s.seed = rand.Uint64()
	}
	s.mu.ix = newIndex(s.seed)
	sg, err := s.newSegment()
	if err != nil {
		return err
	}
	s.mu.segs[sg.slot] = sg
	s.mu.order = []*segment{sg}
	return s.writeManifest(s.mu.order)
}

// replay applies the records of sg to the index and returns where its
// intact records end. In the last segment, damage with no intact record
// after it is a torn tail, and replay returns its offset; any other
// damage is a *CorruptError.
func (s *Store) replay(sg *segment, from int64, last bool) (int64, error) {
	sc := newScanner(sg, from, sg.size)
	for {
		pos := sc.pos
		b, r, err := sc.next()
		if err == errEnd {
			return pos, nil
		}
		if err != nil {
			if last && !sc.intactAfter(pos+1) {
				return pos, nil
			}
			return 0, &CorruptError{File: sg.path, Offset: pos, Detail: err.Error()}
		}
		_ = b
		if err := s.apply(r, location(sg.slot, pos)); err != nil {
			return 0, err
		}
	}
}

// apply replays one record into the index and the counters.
func (s *Store) apply(r record, loc uint64) error {
	x := s.hash(r.key)
	ref, old, found, err := s.find(x, r.key)
	if err != nil {
		return err
	}
	switch r.kind {
	case kindPut, kindPutOver:
		if found {
			s.mu.ix.setLoc(ref, loc)
			s.live -= int64(old.size)
		} else if err := s.insertLocked(x, loc); err != nil {
			return err
		}
		s.live += int64(r.size)
		if r.kind == kindPut || !found {
			s.nextSeq = max(s.nextSeq, r.seq+1)
		}
	case kindDelete:
		if found {
			s.mu.ix.remove(ref)
			s.live -= int64(old.size)
		}
	}
	return nil
}

// errEnd is a scanner's end of data.
var errEnd = errors.New("end of segment")

// scanner reads the records of a segment in order, through its mapping
// or through ReadAt with a window.
type scanner struct {
	sg       *segment
	pos, end int64
	win      []byte // the bytes from winPos, when not mapped
	winPos   int64
	err      error
}

func newScanner(sg *segment, from, end int64) *scanner {
	return &scanner{sg: sg, pos: from, end: end}
}

// bytesFrom returns the data from pos on: at least want bytes when the
// segment has them.
func (sc *scanner) bytesFrom(pos int64, want int) ([]byte, error) {
	if sc.sg.data != nil {
		return sc.sg.data[pos:sc.end], nil
	}
	if pos >= sc.winPos && pos+int64(want) <= sc.winPos+int64(len(sc.win)) {
		return sc.win[pos-sc.winPos:], nil
	}
	n := min(max(int64(want), 1<<20), sc.end-pos)
	if int64(cap(sc.win)) < n {
		sc.win = make([]byte, n)
	}
	sc.win = sc.win[:n]
	if _, err := sc.sg.f.ReadAt(sc.win, pos); err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", sc.sg.path, err)
	}
	sc.winPos = pos
	return sc.win, nil
}

// next returns the next record and its bytes, errEnd at the end, or why
// the record at sc.pos is not intact (sc.pos stays there).
func (sc *scanner) next() ([]byte, record, error) {
	if sc.pos >= sc.end {
		return nil, record{}, errEnd
	}
	b, err := sc.bytesFrom(sc.pos, recPrefix+64)
	if err != nil {
		return nil, record{}, err
	}
	r, err := parseRecord(b)
	if err == errShort && sc.sg.data == nil && len(b) >= recPrefix {
		if need := recPrefix + int64(uint32le(b[4:])); sc.pos+need <= sc.end {
			if b, err = sc.bytesFrom(sc.pos, int(need)); err != nil {
				return nil, record{}, err
			}
			r, err = parseRecord(b)
		}
	}
	if err != nil {
		return nil, record{}, err
	}
	if !verify(b, r.size) {
		return nil, record{}, errors.New("record checksum mismatch")
	}
	sc.pos += int64(r.size)
	return b[:r.size], r, nil
}

// intactAfter reports whether an intact record starts at any offset from
// pos on: damage followed by one is not a torn tail.
func (sc *scanner) intactAfter(pos int64) bool {
	for p := pos; p+recPrefix+3 <= sc.end; p++ {
		b, err := sc.bytesFrom(p, recPrefix+64)
		if err != nil {
			return true // unreadable: not provably a torn tail
		}
		if len(b) < recPrefix+3 {
			return false
		}
		size := int64(uint32le(b[4:]))
		if size < 3 || size > maxRecord || p+recPrefix+size > sc.end {
			continue
		}
		if sc.sg.data == nil && int64(len(b)) < recPrefix+size {
			if b, err = sc.bytesFrom(p, int(recPrefix+size)); err != nil {
				return true
			}
		}
		if _, err := decodeRecord(b); err == nil {
			return true
		}
	}
	return false
}
