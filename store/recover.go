package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/invariants"
	"github.com/dedupkit/cuckoo/internal/option"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

const lockName = "LOCK"

// isLogFileName reports whether name is a log file's: 16 lowercase hex
// digits and ".log" (logFileName's form).
func isLogFileName(name string) bool {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || len(digits) != 16 {
		return false
	}
	for _, c := range []byte(digits) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ours reports whether a file name is one a Store writes in its
// directory. Open leaves every other file alone.
func ours(name string) bool {
	return name == manifestName || name == manifestName+".tmp" || name == lockName || name == idxName || name == idxName+".tmp" ||
		isLogFileName(name)
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
// 2-core VM. A checkpoint whose checksum passes but which disagrees with
// the log is not usable either: one with an entry outside the records it
// covers; one an entry of which, among 64 Open samples, or among those
// the replay after it looks up, points at a tombstone or at the record of
// a key whose hash does not give the entry (Stats().CheckpointUnused
// says why).
//
// A record at the end of the active log file, past what the checkpoint
// covers, that fails its checks is a write a crash cut short, and cut
// off, unless it verifies with one bit flipped back (in its checksum,
// its size field or the bytes the checksum covers) or with its size set
// to what the file holds: that is damage (tornAt). Every damage Open sees
// returns an error wrapping ErrCorrupt (a *CorruptError naming the file
// and offset) and opens nothing, changing no file: a damaged record among
// those it reads, a sealed log file whose length is not the one the
// manifest recorded when it was sealed, a log file shorter than the
// checkpoint recorded, a sealed log file whose checksum is wrong when
// Open reads it whole. No record damaged in one bit is dropped silently
// (a last record damaged in more bits passes for a torn write, and a log
// cut at a record boundary past the checkpoint is not damage Open can
// see: docs/store.md, Limits). Damage in records Open does not read is
// reported by Get and Verify.
//
// Files in dir that a Store does not write are left alone; log files
// no manifest lists (left by a crash during a rotation or a compaction)
// are removed once the store opens (a store Open refuses keeps them).
// A store written by the first version of this package is read, and its
// manifest rewritten in the current version (recording the sealed log
// files as they are then), which the first version does not read.
func Open(dir string, opts ...Option) (*Store, error) {
	o := defaults()
	if err := option.Apply(&o, opts); err != nil {
		return nil, err
	}
	s := newStore(dir, o)
	if err := s.prepareDir(); err != nil {
		return nil, err
	}
	lock, err := lockDir(s.fs, dir)
	if err != nil {
		return nil, err
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

// newStore returns a Store of dir with options o, before its files are
// read.
func newStore(dir string, o options) *Store {
	s := &Store{dir: dir, fs: o.fs, opt: o, stop: make(chan struct{})}
	s.log = newAppendLog(dir, &s.opt, &s.mu.RWMutex, &s.wmu)
	s.checkpointer = checkpointer{log: s.log, ratio: o.ckRatio, min: o.ckMin, inline: o.ckInline}
	return s
}

// lockDir takes the lock of the store directory dir: ErrLocked while
// another Store (in this process or another) has it.
func lockDir(fsys vfs.FS, dir string) (io.Closer, error) {
	lock, err := fsys.Lock(filepath.Join(dir, lockName))
	if errors.Is(err, vfs.ErrLocked) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("store: locking %s: %w", dir, err)
	}
	return lock, nil
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
	if err := s.lostManifest(names); err != nil {
		return err
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

// closeFiles closes the log files after a failed Open.
func (s *Store) closeFiles() {
	for _, lf := range s.log.order {
		lf.f.Close()
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
	s.seed, s.log.seed, s.log.nextID = m.seed, m.seed, m.nextID
	if s.inspect != nil {
		for i, lf := range m.files {
			s.inspect.noteFile(filepath.Join(s.dir, logFileName(lf.id)), i == len(m.files)-1)
		}
	}
	s.mu.ix = newIndex(s.seed)
	heads := make([][]byte, len(m.files))
	for i, ms := range m.files {
		path := filepath.Join(s.dir, logFileName(ms.id))
		f, err := s.fs.Open(path)
		if errors.Is(err, fs.ErrNotExist) {
			return &CorruptError{File: path, Detail: "log file listed in the manifest is missing"}
		}
		if err != nil {
			return fmt.Errorf("store: opening %s: %w", path, err)
		}
		lf := &logFile{id: ms.id, slot: uint64(i), path: path, f: f}
		s.log.order = append(s.log.order, lf)
		size, err := f.Size()
		if err != nil {
			return fmt.Errorf("store: reading %s: %w", path, err)
		}
		if s.inspect != nil && i == len(m.files)-1 {
			s.inspect.lastSize = size
			if s.inspect.cutAt >= 0 && size > s.inspect.cutAt {
				size = s.inspect.cutAt // read as if cut there
			}
		}
		head := make([]byte, logHeaderSize)
		if size >= logHeaderSize {
			if _, err := f.ReadAt(head, 0); err != nil {
				return fmt.Errorf("store: reading %s: %w", path, err)
			}
		}
		gotID, seed, err := parseLogHeader(head[:min(size, logHeaderSize)])
		if err == nil && (gotID != ms.id || seed != s.seed) {
			err = errors.New("log file header does not match the manifest")
		}
		if err != nil {
			return &CorruptError{File: path, Detail: err.Error()}
		}
		sealed := i < len(m.files)-1
		if sealed && m.version >= manVersion && size != ms.size {
			return &CorruptError{File: path, Offset: min(size, ms.size),
				Detail: fmt.Sprintf("sealed log file is %d bytes; the manifest recorded %d when it was sealed", size, ms.size)}
		}
		heads[i] = head
		lf.size = size
		lf.data = f.Map(s.log.mapSize(size))
	}
	ck, ix, err := s.readCheckpoint(m)
	if err != nil {
		return err
	}
	if err := s.replayLog(m, heads, ck, ix); err != nil {
		if ix == nil || !isIndexWrong(err) {
			return err
		}
		// The checkpoint's checksum passed, but an entry of it points at
		// a record it cannot be the entry of: a cache lost, as a damaged
		// checkpoint is. Read the whole log instead.
		var ce *CorruptError
		errors.As(err, &ce)
		s.ckUnused = "index checkpoint: disagrees with the log: " + ce.indexWhat()
		s.resetLoad()
		if err := s.replayLog(m, heads, ck, nil); err != nil {
			return err
		}
	}
	if s.inspect != nil {
		return nil
	}
	// Log files no manifest lists, and a manifest or checkpoint never
	// renamed, are what a crash left of a rotation, a compaction or a
	// checkpoint. They go only now that the store opens: a store Open
	// refuses keeps every file as it was, for whoever repairs or
	// restores it (an unlisted log file may then be a compaction's
	// output, restored beside an older manifest).
	listed := map[string]bool{}
	for _, lf := range m.files {
		listed[logFileName(lf.id)] = true
	}
	for _, name := range names {
		if name == manifestName+".tmp" || name == idxName+".tmp" || isLogFileName(name) && !listed[name] {
			if err := s.fs.Remove(filepath.Join(s.dir, name)); err != nil {
				return fmt.Errorf("store: removing %s: %w", name, err)
			}
		}
	}
	if m.version < manVersion {
		// Record the sealed log files as they are, in the current format.
		if err := s.log.writeManifest(s.log.order); err != nil {
			return err
		}
	}
	return nil
}

// replayLog sets the index, from the checkpoint ck and its index ix
// when ix is not nil, and replays the log of manifest m after what they
// cover (heads: the log files' headers), cutting a torn tail.
func (s *Store) replayLog(m manifest, heads [][]byte, ck checkpoint, ix *index) error {
	var err error
	// The replay starts, in each log file, after what the checkpoint
	// covers, with the checksum of the bytes before.
	from := make([]int64, len(s.log.order))
	crcs := make([]uint32, len(s.log.order))
	for i := range from {
		from[i], crcs[i] = logHeaderSize, codec.Checksum(heads[i])
	}
	if ix != nil {
		s.mu.ix, s.nextSeq, s.live = ix, ck.nextSeq, ck.live
		s.assignSlots(ck)
		if err := s.checkSample(ix); err != nil {
			return err
		}
		for i, c := range ck.files {
			from[i], crcs[i] = c.size, c.crc
			if ck.version == idxVersion1 {
				// The first version recorded no checksums: compute them.
				if crcs[i], err = s.fileCRC(s.log.order[i], c.size); err != nil {
					return err
				}
			}
		}
	} else {
		for i, lf := range s.log.order {
			s.log.files[i] = lf
		}
	}
	for i, lf := range s.log.order {
		last := i == len(s.log.order)-1
		end, crc := lf.size, crcs[i]
		if from[i] < lf.size || last {
			if end, crc, err = s.replay(lf, from[i], crc, last); err != nil {
				return err
			}
		}
		if !last && m.version >= manVersion && crc != m.files[i].crc {
			return &CorruptError{File: lf.path, Offset: logHeaderSize,
				Detail: "sealed log file's records are intact, but its checksum is not the one the manifest recorded (records were changed, removed or moved)"}
		}
		if end < lf.size && s.inspect != nil {
			// Read only: the tail is left, and the log read as if cut.
			s.inspect.tornAt, s.inspect.torn = end, lf.size-end
		} else if end < lf.size {
			// A tail proven torn (tornAt): cut it, so new records follow
			// the intact ones.
			// The cut need not be synced: a crash that undoes it leaves
			// the same torn tail, cut again.
			if err := lf.f.Truncate(end); err != nil {
				return fmt.Errorf("store: cutting the torn tail of %s: %w", lf.path, err)
			}
		}
		lf.size = min(lf.size, end)
		if last && lf.size > from[i] {
			// Records past the checkpoint were written by a process that
			// may not have synced them: counted as written, so that the
			// first sync (and any checkpoint, which syncs first) syncs
			// them before anything records their length.
			s.log.written = 1
		}
		lf.crc = crc
		s.log.bytes += lf.size
	}
	return nil
}

// resetLoad undoes what a replayLog that failed did, for another from
// the start of the log: no torn tail was cut (a replay that fails cuts
// none), so only the index, the counters and the log files' slots and
// counts go back to what load set.
func (s *Store) resetLoad() {
	s.mu.ix = newIndex(s.seed)
	s.nextSeq, s.live = 0, 0
	s.log.bytes, s.log.written = 0, 0
	s.log.files = [maxLogFiles]*logFile{}
	for i, lf := range s.log.order {
		lf.slot = uint64(i)
	}
	s.checkpointer.replayed, s.checkpointer.sinceRecords, s.checkpointer.sinceBytes = 0, 0, 0
}

// checkpointSample is how many entries of a checkpoint Open checks
// against the records they point at before it uses it.
const checkpointSample = 64

// checkSample checks a sample of the entries of ix, the index of a
// checkpoint Open is about to use (the first entry of checkpointSample
// buckets spread over the table, in the order of their locations): an
// intact record that is a tombstone, or whose key's hash does not give
// the entry, is an indexWrong error. A checkpoint that a bug or another
// store's directory made wrong throughout is so found at Open. Records
// that do not verify, and long ones, are left alone: damage of the log
// that Open does not read is for Get and Verify to report.
func (s *Store) checkSample(ix *index) error {
	var refs [checkpointSample]slotRef
	for _, ref := range ix.sample(&refs) {
		b, lf, pos, err := s.log.recordBytes(ref.loc, true)
		if err != nil {
			continue
		}
		r, err := parseRecord(b)
		if err != nil || r.size > streamAbove || !verify(b, r.size) {
			continue
		}
		if r.kind == kindDelete {
			return indexWrong(lf.path, pos, tombstoneDetail)
		}
		if !ix.holds(ref, s.hash(r.key)) {
			return indexWrong(lf.path, pos, otherKeyDetail)
		}
	}
	return nil
}

// sample writes to out the entries checkSample checks, in the order of
// their locations, and returns them: the first entry of each of
// checkpointSample buckets spread over the table. O(checkpointSample).
func (ix *index) sample(out *[checkpointSample]slotRef) []slotRef {
	n, m := ix.buckets(), 0
	for i := range uint64(checkpointSample) {
		j := i * n / checkpointSample
		if m > 0 && out[m-1].j == j {
			continue
		}
		if k := slices.IndexFunc(ix.bucket(j), func(v uint64) bool { return v != 0 }); k >= 0 {
			out[m] = slotRef{j, k, ix.bucket(j)[k] >> locShift}
			m++
		}
	}
	refs := out[:m]
	slices.SortFunc(refs, func(a, b slotRef) int { return cmp.Compare(a.loc, b.loc) })
	return refs
}

// assignSlots gives the log files the slots the checkpoint ck records,
// and the log files after those free ones.
func (s *Store) assignSlots(ck checkpoint) {
	s.log.files = [maxLogFiles]*logFile{}
	for i, c := range ck.files {
		lf := s.log.order[i]
		lf.slot = c.slot
		s.log.files[lf.slot] = lf
	}
	next := uint64(0)
	for _, lf := range s.log.order[len(ck.files):] {
		for s.log.files[next] != nil {
			next++
		}
		lf.slot = next
		s.log.files[next] = lf
	}
}

// fileCRC returns the CRC-32C of the first n bytes of lf.
func (s *Store) fileCRC(lf *logFile, n int64) (uint32, error) {
	if lf.data != nil {
		return codec.Checksum(lf.data[:n]), nil
	}
	crc := uint32(0)
	buf := make([]byte, 1<<20)
	for off := int64(0); off < n; {
		b := buf[:min(int64(len(buf)), n-off)]
		if _, err := lf.f.ReadAt(b, off); err != nil {
			return 0, fmt.Errorf("store: reading %s: %w", lf.path, err)
		}
		crc = codec.UpdateChecksum(crc, b)
		off += int64(len(b))
	}
	return crc, nil
}

// readCheckpoint reads the INDEX file. It returns the checkpoint and its
// index when they describe a prefix of the log m lists: the same first
// log files, each at least as long as the checkpoint covers, and every
// entry of the index at a location inside what the checkpoint covers. It
// returns no index, and no error, when there is no usable checkpoint
// (none, a damaged one, one of a log a compaction replaced, or one
// whose entries point outside what it covers, which its checksum does
// not catch when a bug wrote it): Open then reads the whole log, and
// s.ckUnused says why. It returns a *CorruptError when the checkpoint
// is sound but the log has lost what it recorded.
func (s *Store) readCheckpoint(m manifest) (checkpoint, *index, error) {
	path := filepath.Join(s.dir, idxName)
	f, err := s.fs.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, nil, nil
	}
	unused := func(why string) (checkpoint, *index, error) {
		s.ckUnused = why
		return checkpoint{}, nil, nil
	}
	if err != nil {
		return unused(err.Error())
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return unused(err.Error())
	}
	ck, ix, err := decodeIndex(io.NewSectionReader(f, 0, size), size, s.seed)
	if err != nil {
		return unused(err.Error())
	}
	if len(ck.files) > len(s.log.order) {
		return unused("index checkpoint: of another log (more log files than the manifest lists)")
	}
	for i, c := range ck.files {
		if c.id != s.log.order[i].id {
			return unused("index checkpoint: of another log (log files the manifest does not list)")
		}
	}
	if ck.version == idxVersion1 && len(ck.files) != len(s.log.order) {
		return unused("index checkpoint: of another log (version 1, not of every log file)")
	}
	for i, c := range ck.files {
		lf := s.log.order[i]
		covered := i < len(ck.files)-1 // sealed when the checkpoint was taken
		switch {
		case c.size > lf.size:
			return ck, nil, &CorruptError{File: lf.path, Offset: lf.size,
				Detail: fmt.Sprintf("log file is %d bytes; the index checkpoint recorded %d written and synced", lf.size, c.size)}
		case covered && c.size != lf.size:
			return ck, nil, &CorruptError{File: lf.path, Offset: c.size,
				Detail: fmt.Sprintf("sealed log file is %d bytes; the index checkpoint recorded %d", lf.size, c.size)}
		case covered && m.version >= manVersion && ck.version >= idxVersion && c.crc != m.files[i].crc:
			return ck, nil, &CorruptError{File: path, Offset: idxFixed + int64(idxEntry*i),
				Detail: "the checkpoint and the manifest record different checksums for " + filepath.Base(lf.path)}
		}
	}
	if why := outsideCovered(ck, ix); why != "" {
		return unused("index checkpoint: disagrees with the log: " + why)
	}
	return ck, ix, nil
}

// outsideCovered says which entry of ix, the index of checkpoint ck,
// names no place a record of the log can start at: a log file slot ck
// does not name, or an offset before the first record or past the last
// whole record ck covers (""; none). Every entry of a checkpoint is the
// location of a record written and synced before it was taken.
func outsideCovered(ck checkpoint, ix *index) string {
	var end [maxLogFiles]int64 // per slot, the last offset a record may start at, plus one
	for _, c := range ck.files {
		end[c.slot] = c.size - (recPrefix + 3) + 1
	}
	var why string
	errBad := errors.New("")
	ix.each(func(r slotRef) error {
		slot, pos := r.loc>>32, int64(r.loc&(1<<32-1))
		switch {
		case end[slot] == 0:
			why = fmt.Sprintf("an entry points into log file slot %d, which it does not name", slot)
		case pos < logHeaderSize || pos >= end[slot]:
			i := slices.IndexFunc(ck.files, func(c ckFile) bool { return c.slot == slot })
			why = fmt.Sprintf("an entry points at offset %d of %s, outside the records it covers (offsets %d to %d)",
				pos, logFileName(ck.files[i].id), logHeaderSize, ck.files[i].size)
		default:
			return nil
		}
		return errBad
	})
	return why
}

// lostManifest returns the error of a directory that holds no manifest
// (names: its files) but log files that hold records: a store whose
// manifest is lost, which Open and Repair both refuse, changing nothing.
// The manifest lists the log files in their order, with the lengths and
// checksums of the sealed ones; no cut of a log file rebuilds it, so it
// is a *RepairError. It returns nil when no log file holds a record.
func (s *Store) lostManifest(names []string) error {
	for _, name := range names {
		if !isLogFileName(name) {
			continue
		}
		path := filepath.Join(s.dir, name)
		f, err := s.fs.Open(path)
		if err != nil {
			return fmt.Errorf("store: opening %s: %w", path, err)
		}
		size, err := f.Size()
		f.Close()
		if err != nil {
			return fmt.Errorf("store: reading %s: %w", path, err)
		}
		if size > logHeaderSize {
			return &RepairError{
				Damage: &CorruptError{File: filepath.Join(s.dir, manifestName), Detail: "missing, and " + name + " holds records"},
				Reason: "the manifest lists the log files in order, with the lengths and checksums of the sealed ones, and no cut rebuilds it",
			}
		}
	}
	return nil
}

// create makes a new store in a directory that has no manifest: empty,
// or holding only what a crash during a create left (log files with no
// record, a lock file).
func (s *Store) create(names []string) error {
	if err := s.lostManifest(names); err != nil {
		return err
	}
	for _, name := range names {
		if !ours(name) {
			return fmt.Errorf("%w: %s holds other files (%s) and no store", ErrNotStore, s.dir, name)
		}
	}
	for _, name := range names {
		if !isLogFileName(name) && name != manifestName+".tmp" && name != idxName && name != idxName+".tmp" {
			continue
		}
		path := filepath.Join(s.dir, name)
		if err := s.fs.Remove(path); err != nil {
			return fmt.Errorf("store: removing %s: %w", path, err)
		}
	}
	s.seed = s.opt.seed
	if !s.opt.seedSet {
		s.seed = rand.Uint64()
	}
	s.log.seed = s.seed
	s.mu.ix = newIndex(s.seed)
	lf, err := s.log.newLogFile()
	if err != nil {
		return err
	}
	s.log.files[lf.slot] = lf
	s.log.order = []*logFile{lf}
	return s.log.writeManifest(s.log.order)
}

// replay applies the records of lf from offset from on to the index,
// and returns where its intact records end and the CRC-32C of its bytes
// up to there, going on from crc, that of the bytes before from. In the
// last log file, a failing record with no intact record after it that
// tornAt proves torn is a torn tail, and replay returns its offset; any
// other damage is a *CorruptError.
func (s *Store) replay(lf *logFile, from int64, crc uint32, last bool) (int64, uint32, error) {
	sc := newScanner(lf, from, lf.size)
	sc.crc = crc
	for {
		pos := sc.pos
		_, r, err := sc.next()
		if err == errEnd {
			return pos, sc.crc, nil
		}
		if err != nil {
			if last && !sc.intactAfter(pos+1) {
				torn, detail, terr := sc.tornAt(pos)
				if terr != nil {
					return 0, 0, terr
				}
				if torn {
					return pos, sc.crc, nil
				}
				return 0, 0, &CorruptError{File: lf.path, Offset: pos, Detail: detail}
			}
			return 0, 0, &CorruptError{File: lf.path, Offset: pos, Detail: err.Error()}
		}
		if err := s.apply(r, location(lf.slot, pos)); err != nil {
			return 0, 0, err
		}
		s.checkpointer.replayed++
		s.checkpointer.counted(r.size)
	}
}

// apply replays one record into the index and the counters.
func (s *Store) apply(r record, loc uint64) error {
	x := s.hash(r.key)
	ref, old, found, err := s.find(x, r.key, false)
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
var errEnd = errors.New("end of log file")

// scanner reads the records of a log file in order, through its mapping
// or through ReadAt with a window.
type scanner struct {
	lf       *logFile
	pos, end int64
	win      []byte // the bytes from winPos, when not mapped
	winPos   int64
	crc      uint32 // CRC-32C of the log file's bytes before pos, when started with it
}

func newScanner(lf *logFile, from, end int64) *scanner {
	return &scanner{lf: lf, pos: from, end: end}
}

// bytesFrom returns the data from pos on: at least want bytes when the
// log file has them.
func (sc *scanner) bytesFrom(pos int64, want int) ([]byte, error) {
	if sc.lf.data != nil {
		return sc.lf.data[pos:sc.end], nil
	}
	if pos >= sc.winPos && pos+int64(want) <= sc.winPos+int64(len(sc.win)) {
		return sc.win[pos-sc.winPos:], nil
	}
	n := min(max(int64(want), 1<<20), sc.end-pos)
	if int64(cap(sc.win)) < n {
		sc.win = make([]byte, n)
	}
	sc.win = sc.win[:n]
	if _, err := sc.lf.f.ReadAt(sc.win, pos); err != nil {
		return nil, fmt.Errorf("store: reading %s: %w", sc.lf.path, err)
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
	if err == errShort && sc.lf.data == nil && len(b) >= recPrefix {
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
	sc.crc = codec.UpdateChecksum(sc.crc, b[:r.size])
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
		if sc.lf.data == nil && int64(len(b)) < recPrefix+size {
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

// tornAt reports whether the record at pos, which fails its checks, is
// a write cut short by a crash (the last log file's tail, with no intact
// record after it), and, when it is not, what the damage is. A crash
// leaves the end of the write it interrupted short, zeros, or garbage
// (blocks the file system had not written); a damaged bit leaves the
// record whole but for that bit. So the tail is damage, and refused,
// when the record verifies once one bit is flipped back: in its
// checksum, in its size field (which names the bytes the checksum
// covers), or in the bytes the checksum covers; and when it verifies
// with its size field set to the bytes the file holds (a damaged size
// field). Anything else failing there is a torn write, and cut: fewer
// bytes than a record's prefix, zeros, or bytes that verify with no one
// bit flipped back. A torn write passes for damage only by chance, one in
// 2^32 for each bit tried; a record damaged in more than one bit passes
// for a torn write, and is cut (docs/store.md, Limits).
func (sc *scanner) tornAt(pos int64) (torn bool, detail string, err error) {
	if sc.end-pos < recPrefix {
		return true, "", nil
	}
	var rec []byte // the file from pos on
	err = sc.each(pos, sc.end, func(b []byte) bool {
		rec = append(rec, b...)
		return true
	})
	if err != nil {
		return false, "", err
	}
	if d, _ := oneBitDamage(rec); d != "" {
		return false, "the last record fails its checks, and " + d + ": damage to a record written whole, not a write cut short", nil
	}
	return true, "", nil
}

// oneBitDamage says how rec, the bytes from a record that fails its
// checksum to the end of the file, verifies with one bit flipped back or
// with its size field set to what the file holds (tornAt), and the size
// field it verifies with (the record's bytes after its first 8); "" if
// it does not.
func oneBitDamage(rec []byte) (detail string, size uint64) {
	sum := uint32le(rec)
	size = uint64(uint32le(rec[4:]))
	covers := func(n uint64) bool { // the record verifies with size n
		var le [4]byte
		binary.LittleEndian.PutUint32(le[:], uint32(n))
		return codec.UpdateChecksum(codec.Checksum(le[:]), rec[recPrefix:recPrefix+n]) == sum
	}
	if have := uint64(len(rec) - recPrefix); have != size && have <= math.MaxUint32 && covers(have) {
		return fmt.Sprintf("its checksum matches the %d bytes the file holds, not the %d its size field says: a damaged size field", have, size), have
	}
	for b := range 32 {
		if n := size ^ 1<<b; n <= uint64(len(rec)-recPrefix) && covers(n) {
			return fmt.Sprintf("it verifies with bit %d of its size field flipped back", b), n
		}
	}
	if size > uint64(len(rec)-recPrefix) {
		return "", 0
	}
	covered := rec[4 : recPrefix+size]
	syndrome := sum ^ codec.Checksum(covered)
	if bits.OnesCount32(syndrome) == 1 {
		return "its checksum differs from the one its bytes give in one bit", size
	}
	// CRC-32C is linear: flipping bit j of byte i of the covered bytes
	// changes the checksum by the checksum, from a zero state, of that
	// bit followed by the bytes after it as zeros. d[j] is that for byte
	// i, from the last byte back.
	tab := crc32.MakeTable(crc32.Castagnoli)
	var d [8]uint32
	for j := range d {
		d[j] = tab[1<<j]
	}
	for i := len(covered) - 1; i >= 0; i-- {
		for j, x := range d {
			if x == syndrome {
				return fmt.Sprintf("it verifies with bit %d of its byte %d flipped back", j, 4+i), size
			}
		}
		for j, x := range d {
			d[j] = tab[byte(x)] ^ x>>8
		}
	}
	return "", 0
}

// each calls fn with the bytes of [from, to) in order, in pieces, until
// fn returns false.
func (sc *scanner) each(from, to int64, fn func([]byte) bool) error {
	for p := from; p < to; {
		b, err := sc.bytesFrom(p, 1)
		if err != nil {
			return err
		}
		b = b[:min(int64(len(b)), to-p)]
		if !fn(b) {
			return nil
		}
		p += int64(len(b))
	}
	return nil
}
