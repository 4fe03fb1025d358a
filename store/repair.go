package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/dedupkit/cuckoo/internal/option"
	"github.com/dedupkit/cuckoo/internal/vfs"
)

// A RepairOption configures Repair. An option given a bad value makes
// Repair return an error wrapping ErrInvalidParameter, and change
// nothing.
type RepairOption func(*repairOptions) error

type repairOptions struct {
	dryRun bool
	fs     vfs.FS
	step   func(step string) error // tests: called after "copied" and "cut"
}

// WithDryRun makes Repair report what it would cut, and where it would
// copy the bytes, and change no file: it opens every file read-only,
// and takes the directory's lock only where its lock file exists (not
// creating it), so that it works on a store it may not write (read-only
// files or directory, a read-only mount).
func WithDryRun() RepairOption {
	return func(o *repairOptions) error { o.dryRun = true; return nil }
}

// RepairReport says what Repair found in a store and what it did.
type RepairReport struct {
	// Damage is the damage found: what Open refuses the store for, or,
	// when Open accepts it, what Verify finds. Nil when there is none:
	// then nothing is cut.
	Damage *CorruptError
	// File is the log file cut (or, with WithDryRun, to be cut), and
	// Offset where: the offset Damage names. Bytes is how many bytes
	// were cut, from Offset to the end of the file.
	File   string
	Offset int64
	Bytes  int64
	// Records is how many records those bytes held: the damaged one and
	// the intact records after it (a write a crash cut short at the end
	// of the file is no record); -1 when they cannot be told apart (a
	// record's size field damaged in more than one bit, or another
	// damaged record among them).
	Records int64
	// Copy is the file that holds the bytes cut, exactly: File's name
	// followed by ".cut-" and Offset, beside it in the store's
	// directory, or that name followed by ".2", ".3" … when a file of
	// that name holds other bytes (Repair never replaces a file). A copy
	// an earlier Repair left of the same bytes is kept, not made again.
	// Repair writes it as Copy + ".tmp" and renames it when it is whole
	// and synced; a ".tmp" file a crash left is written anew.
	Copy string
	// Cut reports whether File was cut: false with WithDryRun, and when
	// there was no damage.
	Cut bool
	// Index reports that Damage is the index's, not the log's (its
	// Detail begins "the index is wrong, not the log"): every record
	// verifies, but the index checkpoint (INDEX) Open loaded disagrees
	// with them, though its checksum passes. Repair removed INDEX (with
	// WithDryRun: would remove it), and read the store again to prove
	// that it opens, the index rebuilt from the log, and verifies; it
	// cut nothing. Open rebuilds the index so, once; Close writes a
	// checkpoint of it.
	Index bool
	// TornAt and Torn describe a torn tail of the last log file, File,
	// in a store without damage: Torn bytes from TornAt on that a crash
	// cut short, which Open cuts itself. Repair leaves them (Torn 0: no
	// torn tail).
	TornAt, Torn int64
}

// RepairError is Repair's refusal: the damage it found, which no cut of
// the last log file's tail repairs, and why. It wraps ErrCorrupt and
// ErrNotRepairable; Repair changed no file. Open returns one too, the
// same, for a directory whose log files hold records but which has no
// MANIFEST (a store whose manifest is lost), and changes no file.
type RepairError struct {
	Damage *CorruptError
	Reason string
}

func (e *RepairError) Error() string {
	return e.Damage.Error() + "; not repairable by a cut of the last log file: " + e.Reason
}

// Unwrap returns the damage (a *CorruptError, which wraps ErrCorrupt)
// and ErrNotRepairable.
func (e *RepairError) Unwrap() []error { return []error{e.Damage, ErrNotRepairable} }

// Repair repairs the damage Open refuses a store for in the tail of its
// last log file, by cutting that file where the damage starts, as
// docs/store.md ("Repairing a refused tail") describes, keeping a copy
// of the bytes it cuts. It takes the directory's lock as Open does: a
// store open elsewhere is ErrLocked, and nothing is read or changed. A
// path that holds no store is ErrNotStore; a directory whose log files
// hold records but which has no MANIFEST is a *RepairError (a manifest
// lost: no cut rebuilds it).
//
// Repair reads the store as Open does, changing no file, and verifies
// every record as Verify does:
//
//   - When Open accepts the store and every record verifies, Repair
//     changes nothing and returns a report with no Damage. (A torn tail,
//     which Open cuts itself, is reported in TornAt and Torn, and left.)
//   - When Open refuses a record of the last log file past what the
//     index checkpoint covers, Repair reads the store again as if the file
//     were cut at that record's offset. When that store opens and
//     verifies, Repair first writes the bytes from the offset to the end
//     of the file to a new file (the report's Copy), and syncs it and the
//     directory; then it cuts the log file and syncs it; then it reads the
//     store again, as Open does, to prove that it opens. A crash between
//     the steps leaves the copy and the log file either whole or cut,
//     never a tail lost without its copy; Repair run again finishes the
//     job, keeping the copy it finds. The records from the offset on are
//     lost (Records says how many): Open then has every record before it.
//   - When every record verifies but the index does not (Verify: the
//     index checkpoint Open loaded is wrong, though its checksum
//     passes), Repair removes the INDEX file, which holds nothing the
//     log does not, and reads the store again to prove that it opens,
//     the index rebuilt from the log, and verifies (RepairReport.Index).
//   - Any other damage (in a sealed log file, in records the checkpoint
//     covers, in the manifest, a log file shorter than the checkpoint
//     recorded, or a store the cut would leave damaged) is a
//     *RepairError saying why, and Repair changes nothing: a cut is no
//     repair there (restore the store from a backup).
//
// With WithDryRun, Repair finds and reports the same, Copy included, and
// changes nothing. Repair reads the whole log, as Verify does: twice
// when there is damage.
func Repair(dir string, opts ...RepairOption) (RepairReport, error) {
	var rep RepairReport
	ro := repairOptions{fs: vfs.OS{}}
	if err := option.Apply(&ro, opts); err != nil {
		return rep, err
	}
	o := defaults()
	o.fs, o.mustExist = ro.fs, true
	if ro.dryRun {
		o.fs = readOnlyFS{ro.fs}
	}
	if err := newStore(dir, o).prepareDir(); err != nil {
		return rep, err
	}
	lock, err := lockDir(o.fs, dir)
	if err != nil {
		return rep, err
	}
	defer lock.Close()

	in, err := inspect(dir, o, -1, true)
	var ce *CorruptError
	if err == nil {
		if in.torn > 0 {
			rep.File, rep.TornAt, rep.Torn = in.last, in.tornAt, in.torn
		}
		return rep, nil
	}
	if !errors.As(err, &ce) {
		return rep, err
	}
	rep.Damage = ce
	if ce.index {
		rep.Index, rep.File = true, filepath.Join(dir, idxName)
		if ro.dryRun {
			return rep, nil
		}
		return rep, removeIndex(dir, o)
	}
	refuse := func(why string) (RepairReport, error) {
		return rep, &RepairError{Damage: ce, Reason: why}
	}
	switch {
	case in.last == "":
		return refuse("the manifest, which lists the log files, is damaged")
	case in.sealed[ce.File]:
		return refuse("the damage is in a sealed log file (every log file but the last is), which the manifest recorded whole")
	case ce.File != in.last:
		return refuse(fmt.Sprintf("the damage is in %s, not in the records of the last log file", filepath.Base(ce.File)))
	case ce.Offset < logHeaderSize:
		return refuse("the damage is at the log file's start, in its header")
	case ce.Offset >= in.lastSize:
		return refuse("the log file is shorter than the store recorded it, and a cut takes nothing away")
	}
	if _, err := inspect(dir, o, ce.Offset, true); err != nil {
		var after *CorruptError
		if errors.As(err, &after) {
			return refuse(fmt.Sprintf("cut at offset %d, the store would still be damaged (%s at offset %d: %s)",
				ce.Offset, after.File, after.Offset, after.Detail))
		}
		return rep, err
	}

	rep.File, rep.Offset, rep.Bytes = ce.File, ce.Offset, in.lastSize-ce.Offset
	f, err := o.fs.Open(ce.File)
	if err != nil {
		return rep, fmt.Errorf("store: opening %s: %w", ce.File, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return rep, fmt.Errorf("store: reading %s: %w", ce.File, err)
	}
	if size != in.lastSize {
		return rep, fmt.Errorf("store: %s changed while it was read (%d bytes, then %d)", ce.File, in.lastSize, size)
	}
	rep.Records = recordsFrom(&logFile{path: ce.File, f: f, size: in.lastSize}, ce.Offset)
	copyPath, kept, err := copyName(o.fs, f, ce.File, ce.Offset, in.lastSize)
	if err != nil {
		return rep, err
	}
	rep.Copy = copyPath
	if ro.dryRun {
		return rep, nil
	}
	if kept {
		err = syncCopy(o.fs, copyPath)
	} else {
		err = writeCopy(o.fs, f, copyPath, ce.Offset, in.lastSize)
	}
	if err != nil {
		return rep, err
	}
	if err := ro.afterStep("copied"); err != nil {
		return rep, err
	}
	if err := f.Truncate(ce.Offset); err != nil {
		return rep, fmt.Errorf("store: cutting %s at offset %d: %w (the bytes from there on are copied in %s)", ce.File, ce.Offset, err, copyPath)
	}
	if err := f.Sync(); err != nil {
		return rep, fmt.Errorf("store: syncing %s after cutting it at offset %d: %w (the bytes cut are copied in %s)", ce.File, ce.Offset, err, copyPath)
	}
	rep.Cut = true
	if err := ro.afterStep("cut"); err != nil {
		return rep, err
	}
	// The bytes before the offset were verified above: Open's reading of
	// the store is the proof.
	if _, err := inspect(dir, o, -1, false); err != nil {
		return rep, fmt.Errorf("store: %s was cut at offset %d (the bytes cut are copied in %s), but the store does not open: %w", ce.File, ce.Offset, copyPath, err)
	}
	return rep, nil
}

// removeIndex removes the INDEX file of the store in dir, which holds
// nothing the log does not (a checkpoint of the index), and proves that
// the store then opens and verifies.
func removeIndex(dir string, o options) error {
	path := filepath.Join(dir, idxName)
	if err := o.fs.Remove(path); err != nil {
		return fmt.Errorf("store: removing %s, a wrong index checkpoint: %w", path, err)
	}
	if err := o.fs.SyncDir(dir); err != nil {
		return fmt.Errorf("store: syncing %s after removing %s: %w", dir, idxName, err)
	}
	if _, err := inspect(dir, o, -1, true); err != nil {
		return fmt.Errorf("store: %s was removed, but the store with the index rebuilt from its log does not verify: %w", path, err)
	}
	return nil
}

func (o *repairOptions) afterStep(step string) error {
	if o.step == nil {
		return nil
	}
	return o.step(step)
}

// inspection is Repair's read of a store: load reads the files as Open
// does and changes none of them.
type inspection struct {
	cutAt    int64           // >= 0: the last log file is read as if it ended there
	last     string          // set by load: the last log file
	lastSize int64           // and its size
	sealed   map[string]bool // and the sealed log files
	tornAt   int64           // set by load: a torn tail, torn bytes from tornAt
	torn     int64
}

// inspect reads the store in dir as Open does, without its lock (the
// caller holds it) and changing no file, with the last log file read as
// if cut at cutAt when cutAt >= 0, and, when verify, verifies every
// record: nil when Open would open the store (and Verify find no
// damage).
func inspect(dir string, o options, cutAt int64, verify bool) (*inspection, error) {
	in := &inspection{cutAt: cutAt, sealed: map[string]bool{}}
	s := newStore(dir, o)
	s.inspect = in
	err := s.load()
	if err == nil && verify {
		err = s.Verify()
	}
	s.closeFiles()
	return in, err
}

// noteFile records a log file the manifest lists in an inspection.
func (in *inspection) noteFile(path string, last bool) {
	if last {
		in.last = path
	} else {
		in.sealed[path] = true
	}
}

// recordsFrom counts the records of lf from off, where a record fails
// its checks, to the end of the file: that record and the intact ones
// after it. When the record verifies with one bit flipped back (Open's
// proof of damage, oneBitDamage), that gives its size, and the records
// after it are followed from its end, up to the end of the file or to a
// torn write there (which holds no record). Otherwise its size is found
// as the one, of its size field and that field with one bit flipped
// back, that leads through intact records to the end of the file. It
// returns -1 when neither tells the records apart.
func recordsFrom(lf *logFile, off int64) int64 {
	end := min(lf.size, off+recPrefix+maxRecord)
	rec := make([]byte, 0, max(end-off, 0)) // the record's bytes, and those after it, as many as a record may hold
	err := newScanner(lf, off, lf.size).each(off, end, func(b []byte) bool {
		rec = append(rec, b...)
		return true
	})
	if err != nil || len(rec) < recPrefix {
		return -1
	}
	if detail, n := oneBitDamage(rec); detail != "" {
		return recordsAfter(lf, off+recPrefix+int64(n), 1)
	}
	size := int64(uint32le(rec[4:]))
	for flip := -1; flip < 32; flip++ {
		n := size
		if flip >= 0 {
			n ^= 1 << flip
		}
		next := off + recPrefix + n
		if next > lf.size {
			continue
		}
		count := int64(1)
		for rest := newScanner(lf, next, lf.size); ; count++ {
			if _, _, err := rest.next(); err == errEnd {
				return count
			} else if err != nil {
				break
			}
		}
	}
	return -1
}

// recordsAfter returns count plus the number of records of lf from off
// to its end: the intact ones, and, when a record there fails its checks
// with no intact record after it, none for a torn write (tornAt) or one
// for a damaged record. It returns -1 when a record fails its checks
// with an intact record after it, or lf cannot be read.
func recordsAfter(lf *logFile, off, count int64) int64 {
	sc := newScanner(lf, off, lf.size)
	for ; ; count++ {
		pos := sc.pos
		_, _, err := sc.next()
		if err == errEnd {
			return count
		}
		if err == nil {
			continue
		}
		if sc.intactAfter(pos + 1) {
			return -1
		}
		torn, _, err := sc.tornAt(pos)
		switch {
		case err != nil:
			return -1
		case torn:
			return count
		}
		return count + 1
	}
}

// copyName returns the name of the copy of the bytes [off, end) of the
// log file f at path: path.cut-OFF, or path.cut-OFF.2 and so on when
// that name holds other bytes; kept reports that a file of that name
// holds those bytes already (left by a Repair a crash stopped).
func copyName(fsys vfs.FS, f vfs.File, path string, off, end int64) (name string, kept bool, err error) {
	base := fmt.Sprintf("%s.cut-%d", path, off)
	for i := 1; i <= 100; i++ {
		name = base
		if i > 1 {
			name = fmt.Sprintf("%s.%d", base, i)
		}
		isDir, err := fsys.IsDir(name)
		if errors.Is(err, fs.ErrNotExist) {
			return name, false, nil
		}
		if err != nil {
			return "", false, fmt.Errorf("store: %w", err)
		}
		if isDir {
			continue
		}
		same, err := holdsBytes(fsys, name, f, off, end)
		if err != nil {
			return "", false, err
		}
		if same {
			return name, true, nil
		}
	}
	return "", false, fmt.Errorf("store: %s and 99 more names like it are taken by other files: move them away", base)
}

// holdsBytes reports whether the file name holds exactly the bytes
// [off, end) of f.
func holdsBytes(fsys vfs.FS, name string, f vfs.File, off, end int64) (bool, error) {
	c, err := fsys.Open(name)
	if err != nil {
		return false, fmt.Errorf("store: opening %s: %w", name, err)
	}
	defer c.Close()
	if size, err := c.Size(); err != nil || size != end-off {
		return false, err
	}
	a, b := make([]byte, copyChunk), make([]byte, copyChunk)
	for p := off; p < end; {
		n := min(int64(copyChunk), end-p)
		if err := readFull(f, a[:n], p); err != nil {
			return false, err
		}
		if err := readFull(c, b[:n], p-off); err != nil {
			return false, fmt.Errorf("store: reading %s: %w", name, err)
		}
		if !bytes.Equal(a[:n], b[:n]) {
			return false, nil
		}
		p += n
	}
	return true, nil
}

// copyChunk is how much Repair reads and writes at a time.
const copyChunk = 1 << 20

// readFull reads len(b) bytes of f at off.
func readFull(f vfs.File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// writeCopy writes the bytes [off, end) of src to a new file name,
// which must not exist, and syncs it and its directory. It writes them to
// name.tmp first, syncs that, and renames it to name, so that a file of
// the copy's name is always whole: a crash while it writes leaves only
// name.tmp, which the next Repair writes anew (it holds no byte the log
// file does not: the cut comes after the rename). On failure it removes
// what it wrote.
func writeCopy(fsys vfs.FS, src vfs.File, name string, off, end int64) (err error) {
	tmp := name + ".tmp"
	if err := fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: removing %s, a copy a Repair a crash stopped left: %w", tmp, err)
	}
	c, err := fsys.CreateNew(tmp)
	if err != nil {
		return fmt.Errorf("store: creating %s: %w", tmp, err)
	}
	defer func() {
		if err != nil {
			c.Close()
			fsys.Remove(tmp)
		}
	}()
	buf := make([]byte, min(int64(copyChunk), end-off))
	for p := off; p < end; {
		b := buf[:min(int64(len(buf)), end-p)]
		if err := readFull(src, b, p); err != nil {
			return fmt.Errorf("store: reading the bytes to copy to %s: %w", tmp, err)
		}
		if _, err := c.WriteAt(b, p-off); err != nil {
			return fmt.Errorf("store: writing %s: %w", tmp, err)
		}
		p += int64(len(b))
	}
	if err := c.Sync(); err != nil {
		return fmt.Errorf("store: syncing %s: %w", tmp, err)
	}
	if err := c.Close(); err != nil {
		return fmt.Errorf("store: closing %s: %w", tmp, err)
	}
	// copyName found name free, and the store's lock keeps any other
	// Repair out; a rename would replace a file another process made
	// there meanwhile, so look once more.
	switch _, err := fsys.IsDir(name); {
	case err == nil:
		return fmt.Errorf("store: %s appeared while Repair wrote the copy: move it away", name)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: %w", err)
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return fmt.Errorf("store: renaming %s to %s: %w", tmp, name, err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		fsys.Remove(name)
		return fmt.Errorf("store: syncing the directory of %s: %w", name, err)
	}
	return nil
}

// syncCopy makes a copy an earlier Repair wrote durable, as writeCopy
// does: it may have been stopped before its syncs.
func syncCopy(fsys vfs.FS, name string) error {
	c, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("store: opening %s: %w", name, err)
	}
	err = c.Sync()
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.SyncDir(filepath.Dir(name))
	}
	if err != nil {
		return fmt.Errorf("store: syncing %s: %w", name, err)
	}
	return nil
}
