package store

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

const lockName = "LOCK"

// segPattern matches the names of segment files.
var segPattern = regexp.MustCompile(`^[0-9a-f]{16}\.log$`)

// ours reports whether a file name is one a Store writes in its
// directory. Open leaves every other file alone.
func ours(name string) bool {
	return name == manifestName || name == manifestName+".tmp" || name == lockName || name == idxName || name == idxName+".tmp" ||
		segPattern.MatchString(name)
}

// Open opens the store in dir, creating dir and an empty store if
// needed (unless WithMustExist). Only one Store, in one process, can
// have a directory open: a second Open returns ErrLocked until the first
// is closed.
//
// Open reads the index checkpoint (the INDEX file: about 9 bytes per
// key), which the Store writes while it runs (WithCheckpoints) and at
// Close, and replays the records written after it: after a Close, none;
// after a crash, those written since the last checkpoint, with the
// default schedule at most about keys/16, or 262,144 in a smaller store
// (docs/store.md has the times). Without a usable checkpoint it reads the
// whole log, verifying every record's checksum, and rebuilds the index:
// about the time of reading the log plus 1 to 4 µs per record on a
// 2-core VM.
//
// A torn record at the end of the active segment, past what the
// checkpoint covers (a write cut short by a crash), is cut off. Every
// other damage Open sees returns an error wrapping ErrCorrupt (a
// *CorruptError naming the file and offset) and opens nothing: a damaged
// record among those it reads, a sealed segment whose length is not the
// one the manifest recorded when it was sealed, a segment shorter than
// the checkpoint recorded, a sealed segment whose checksum is wrong when
// Open reads it whole. No record is ever dropped silently. Damage in
// records Open does not read is reported by Get and Verify.
//
// Files in dir that a Store does not write are left alone; segment files
// no manifest lists (left by a crash during a rotation or a compaction)
// are removed. A store written by the first version of this package is
// read, and its manifest rewritten in the current version (recording
// the sealed segments as they are then), which the first version does
// not read.
func Open(dir string, opts ...Option) (*Store, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	s := &Store{dir: dir, fs: o.fs, opt: o, stop: make(chan struct{})}
	s.scond = sync.NewCond(&s.smu)
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	lock, err := s.fs.Lock(filepath.Join(dir, lockName))
	if errors.Is(err, vfs.ErrLocked) {
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

// prepareDir makes sure dir is a directory, creating it when Open may
// create a store, and, when it may not, that dir holds a manifest.
func (s *Store) prepareDir() error {
	isDir, err := s.fs.IsDir(s.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && s.opt.mustExist:
		return fmt.Errorf("%w: %s does not exist", ErrNotStore, s.dir)
	case errors.Is(err, fs.ErrNotExist):
		if err := s.fs.MkdirAll(s.dir); err != nil {
			return fmt.Errorf("store: creating %s: %w", s.dir, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("store: %w", err)
	case !isDir:
		return fmt.Errorf("%w: %s is a file, not a directory", ErrNotStore, s.dir)
	}
	if !s.opt.mustExist {
		return nil
	}
	names, err := s.fs.List(s.dir)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", s.dir, err)
	}
	for _, name := range names {
		if name == manifestName {
			return nil
		}
	}
	for _, name := range names {
		if !ours(name) {
			return fmt.Errorf("%w: %s holds other files (%s) and no store", ErrNotStore, s.dir, name)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: %s is an empty directory", ErrNotStore, s.dir)
	}
	return fmt.Errorf("%w: %s holds no manifest", ErrNotStore, s.dir)
}

// closeFiles closes the segment files after a failed Open.
func (s *Store) closeFiles() {
	for _, sg := range s.mu.order {
		sg.f.Close()
	}
}

// load reads the manifest, the checkpoint and the log, or creates a new
// store.
func (s *Store) load() error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", s.dir, err)
	}
	mpath := filepath.Join(s.dir, manifestName)
	raw, err := s.fs.ReadFile(mpath)
	if errors.Is(err, fs.ErrNotExist) {
		if s.opt.mustExist {
			return fmt.Errorf("%w: %s holds no manifest", ErrNotStore, s.dir)
		}
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
	for _, sg := range m.segs {
		listed[segName(sg.id)] = true
	}
	// Segments no manifest lists, and a manifest or checkpoint never
	// renamed, are what a crash left of a rotation, a compaction or a
	// checkpoint.
	for _, name := range names {
		if name == manifestName+".tmp" || name == idxName+".tmp" || segPattern.MatchString(name) && !listed[name] {
			if err := s.fs.Remove(filepath.Join(s.dir, name)); err != nil {
				return fmt.Errorf("store: removing %s: %w", name, err)
			}
		}
	}
	heads := make([][]byte, len(m.segs))
	for i, ms := range m.segs {
		path := filepath.Join(s.dir, segName(ms.id))
		f, err := s.fs.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return &CorruptError{File: path, Detail: "segment listed in the manifest is missing"}
		}
		if err != nil {
			return fmt.Errorf("store: opening %s: %w", path, err)
		}
		sg := &segment{id: ms.id, slot: uint64(i), path: path, f: f}
		s.mu.order = append(s.mu.order, sg)
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
		if err == nil && (gotID != ms.id || seed != s.seed) {
			err = errors.New("segment header does not match the manifest")
		}
		if err != nil {
			return &CorruptError{File: path, Detail: err.Error()}
		}
		sealed := i < len(m.segs)-1
		if sealed && m.version >= manVersion && size != ms.size {
			return &CorruptError{File: path, Offset: min(size, ms.size),
				Detail: fmt.Sprintf("sealed segment is %d bytes; the manifest recorded %d when it was sealed", size, ms.size)}
		}
		heads[i] = head
		sg.size = size
		sg.data = f.Map(s.mapSize())
	}
	ck, ix, err := s.readCheckpoint(m)
	if err != nil {
		return err
	}
	// The replay starts, in each segment, after what the checkpoint
	// covers, with the checksum of the bytes before.
	from := make([]int64, len(s.mu.order))
	crcs := make([]uint32, len(s.mu.order))
	for i := range from {
		from[i], crcs[i] = segHeaderSize, crc32.Checksum(heads[i], castagnoli)
	}
	if ix != nil {
		s.mu.ix, s.nextSeq, s.live = ix, ck.nextSeq, ck.live
		s.assignSlots(ck)
		for i, c := range ck.segs {
			from[i], crcs[i] = c.size, c.crc
			if ck.version == idxVersion1 {
				// The first version recorded no checksums: compute them.
				if crcs[i], err = s.segmentCRC(s.mu.order[i], c.size); err != nil {
					return err
				}
			}
		}
	} else {
		for i, sg := range s.mu.order {
			s.mu.segs[i] = sg
		}
	}
	for i, sg := range s.mu.order {
		last := i == len(s.mu.order)-1
		end, crc := sg.size, crcs[i]
		if from[i] < sg.size || last {
			if end, crc, err = s.replay(sg, from[i], crc, last); err != nil {
				return err
			}
		}
		if !last && m.version >= manVersion && crc != m.segs[i].crc {
			return &CorruptError{File: sg.path, Offset: segHeaderSize,
				Detail: "sealed segment's records are intact, but its checksum is not the one the manifest recorded (records were changed, removed or moved)"}
		}
		if end < sg.size {
			// A torn tail: cut it, so new records follow the intact ones.
			// The cut need not be synced: a crash that undoes it leaves
			// the same torn tail, cut again.
			if err := sg.f.Truncate(end); err != nil {
				return fmt.Errorf("store: cutting the torn tail of %s: %w", sg.path, err)
			}
			sg.size = end
		}
		if last && sg.size > from[i] {
			// Records past the checkpoint were written by a process that
			// may not have synced them: counted as written, so that the
			// first sync (and any checkpoint, which syncs first) syncs
			// them before anything records their length.
			s.written = 1
		}
		sg.crc = crc
		s.logBytes += sg.size
	}
	if m.version < manVersion {
		// Record the sealed segments as they are, in the current format.
		if err := s.writeManifest(s.mu.order); err != nil {
			return err
		}
	}
	return nil
}

// assignSlots gives the segments the slots the checkpoint ck records,
// and the segments after those free ones.
func (s *Store) assignSlots(ck checkpoint) {
	s.mu.segs = [maxSegments]*segment{}
	for i, c := range ck.segs {
		sg := s.mu.order[i]
		sg.slot = c.slot
		s.mu.segs[sg.slot] = sg
	}
	next := uint64(0)
	for _, sg := range s.mu.order[len(ck.segs):] {
		for s.mu.segs[next] != nil {
			next++
		}
		sg.slot = next
		s.mu.segs[next] = sg
	}
}

// segmentCRC returns the CRC-32C of the first n bytes of sg.
func (s *Store) segmentCRC(sg *segment, n int64) (uint32, error) {
	if sg.data != nil {
		return crc32.Checksum(sg.data[:n], castagnoli), nil
	}
	crc := uint32(0)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < n; {
		b := buf[:min(int64(len(buf)), n-off)]
		if _, err := sg.f.ReadAt(b, off); err != nil {
			return 0, fmt.Errorf("store: reading %s: %w", sg.path, err)
		}
		crc = crc32.Update(crc, castagnoli, b)
		off += int64(len(b))
	}
	return crc, nil
}

// readCheckpoint reads the INDEX file. It returns the checkpoint and its
// index when they describe a prefix of the log m lists: the same first
// segments, each at least as long as the checkpoint covers. It returns
// no index, and no error, when there is no usable checkpoint (none, a
// damaged one, or one of a log a compaction replaced): Open then reads
// the whole log. It returns a *CorruptError when the checkpoint is
// sound but the log has lost what it recorded.
func (s *Store) readCheckpoint(m manifest) (checkpoint, *index, error) {
	path := filepath.Join(s.dir, idxName)
	f, err := s.fs.Open(path)
	if err != nil {
		return checkpoint{}, nil, nil
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return checkpoint{}, nil, nil
	}
	ck, ix, err := decodeIndex(io.NewSectionReader(f, 0, size), size, s.seed)
	if err != nil || len(ck.segs) > len(s.mu.order) {
		return checkpoint{}, nil, nil
	}
	for i, c := range ck.segs {
		if c.id != s.mu.order[i].id {
			return checkpoint{}, nil, nil
		}
	}
	if ck.version == idxVersion1 && len(ck.segs) != len(s.mu.order) {
		return checkpoint{}, nil, nil
	}
	for i, c := range ck.segs {
		sg := s.mu.order[i]
		covered := i < len(ck.segs)-1 // sealed when the checkpoint was taken
		switch {
		case c.size > sg.size:
			return ck, nil, &CorruptError{File: sg.path, Offset: sg.size,
				Detail: fmt.Sprintf("segment is %d bytes; the index checkpoint recorded %d written and synced", sg.size, c.size)}
		case covered && c.size != sg.size:
			return ck, nil, &CorruptError{File: sg.path, Offset: c.size,
				Detail: fmt.Sprintf("sealed segment is %d bytes; the index checkpoint recorded %d", sg.size, c.size)}
		case covered && m.version >= manVersion && ck.version >= idxVersion && c.crc != m.segs[i].crc:
			return ck, nil, &CorruptError{File: path, Offset: idxFixed + int64(idxEntry*i),
				Detail: "the checkpoint and the manifest record different checksums for " + filepath.Base(sg.path)}
		}
	}
	return ck, ix, nil
}

// create makes a new store in a directory that has no manifest: empty,
// or holding only what a crash during a create left (segments with no
// record, a lock file).
func (s *Store) create(names []string) error {
	for _, name := range names {
		if !ours(name) {
			return fmt.Errorf("%w: %s holds other files (%s) and no store", ErrNotStore, s.dir, name)
		}
	}
	for _, name := range names {
		if !segPattern.MatchString(name) && name != manifestName+".tmp" && name != idxName && name != idxName+".tmp" {
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

// replay applies the records of sg from offset from on to the index,
// and returns where its intact records end and the CRC-32C of its bytes
// up to there, going on from crc, that of the bytes before from. In the
// last segment, damage with no intact record after it is a torn tail,
// and replay returns its offset; any other damage is a *CorruptError.
func (s *Store) replay(sg *segment, from int64, crc uint32, last bool) (int64, uint32, error) {
	sc := newScanner(sg, from, sg.size)
	sc.crc = crc
	for {
		pos := sc.pos
		_, r, err := sc.next()
		if err == errEnd {
			return pos, sc.crc, nil
		}
		if err != nil {
			if last && !sc.intactAfter(pos+1) {
				return pos, sc.crc, nil
			}
			return 0, 0, &CorruptError{File: sg.path, Offset: pos, Detail: err.Error()}
		}
		if err := s.apply(r, location(sg.slot, pos)); err != nil {
			return 0, 0, err
		}
		s.replayed++
		s.sinceRecords++
		s.sinceBytes += int64(r.size)
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
	crc      uint32 // CRC-32C of the segment's bytes before pos, when started with it
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
	sc.crc = crc32.Update(sc.crc, castagnoli, b[:r.size])
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
