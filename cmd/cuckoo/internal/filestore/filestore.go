// Package filestore keeps files in a store.Store as content-defined
// chunks: each file is cut where a rolling hash of its bytes says
// (github.com/restic/chunker: Rabin fingerprints over a 64-byte window,
// the chunker restic has used for years), each distinct chunk is stored
// once under its SHA-256, and each file as the list of its chunks. A
// chunk boundary depends only on the bytes near it, so an edit moves
// only the boundaries around it, and files that share content share
// chunks. It is the engine of 'cuckoo store import' and 'export'.
//
// Keys in the store (user keys from the command line hold no NUL byte,
// so these never collide with them):
//
//	"\x00m"          the chunker's polynomial (8 bytes, little-endian), drawn at random
//	                 when the store is first used for files, so chunking is the same
//	                 for every import into one store
//	"\x00c" + sha256 a chunk
//	"\x00f" + name   a file: "CKF2", its permission bits (uvarint, 0 to 0o777),
//	                 then as "CKF1": size (uvarint), SHA-256 of the whole file, chunk
//	                 count (uvarint), the chunks' SHA-256s; "CKF1" records (written by
//	                 Import, and by versions that did not keep modes) have no mode
package filestore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"

	"github.com/dedupkit/cuckoo/store"
	"github.com/restic/chunker"
)

// Chunk sizes: at least 2 KiB, at most 64 KiB, 8 KiB on average (13
// bits), sizes that dedup source files (a few KiB to a few hundred) well.
const (
	MinChunk    = 2 << 10
	MaxChunk    = 64 << 10
	averageBits = 13
)

var (
	metaKey     = []byte("\x00m")
	chunkPrefix = []byte("\x00c")
	filePrefix  = []byte("\x00f")
	fileMagic   = []byte("CKF1")
	modeMagic   = []byte("CKF2") // a file record with its mode
)

// ErrNoFile is returned by Export for a name never imported.
var ErrNoFile = errors.New("filestore: no such file in the store")

// ErrDamaged is returned by Export when a chunk or the file does not
// match its SHA-256, and by the reading of a damaged file record.
var ErrDamaged = errors.New("filestore: damaged")

// Store is a store.Store used for files. It is not safe for concurrent
// use.
type Store struct {
	s     *store.Store
	pol   chunker.Pol
	ch    *chunker.Chunker
	buf   []byte
	chunk [sha256.Size]byte
}

// New uses s for files. It reads s and does not write to it: the
// chunker's polynomial is drawn and recorded by the first Import into a
// store that has none, so listing or exporting leaves the store as it was.
func New(s *store.Store) (*Store, error) {
	fs := &Store{s: s, buf: make([]byte, MaxChunk)}
	v, err := s.Get(metaKey)
	switch {
	case err == nil && len(v) == 8:
		fs.pol = chunker.Pol(binary.LittleEndian.Uint64(v))
		if !fs.pol.Irreducible() {
			return nil, fmt.Errorf("%w: the chunker's polynomial is not irreducible", ErrDamaged)
		}
	case err == nil:
		return nil, fmt.Errorf("%w: chunker record of %d bytes", ErrDamaged, len(v))
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	return fs, nil
}

// chunker returns the chunker, first drawing the polynomial and recording
// it in the store when the store has none.
func (fs *Store) chunker() (*chunker.Chunker, error) {
	if fs.ch != nil {
		return fs.ch, nil
	}
	if fs.pol == 0 {
		pol, err := chunker.RandomPolynomial()
		if err != nil {
			return nil, err
		}
		if err := fs.s.Put(metaKey, binary.LittleEndian.AppendUint64(nil, uint64(pol))); err != nil {
			return nil, err
		}
		fs.pol = pol
	}
	fs.ch = chunker.NewWithBoundaries(nil, fs.pol, MinChunk, MaxChunk)
	return fs.ch, nil
}

// ImportStats counts what an Import did.
type ImportStats struct {
	Bytes      int64 // the file's size
	Chunks     int   // its chunks
	NewChunks  int   // chunks the store did not have
	NewBytes   int64 // their bytes
	Unchanged  bool  // the store already held this file, as it is
	StoreBytes int64 // bytes the store's log grew by
}

// Import stores the file read from r under name, replacing a file of that
// name, without a mode (see ImportMode).
func (fs *Store) Import(name string, r io.Reader) (ImportStats, error) {
	return fs.importFile(name, -1, r)
}

// ImportMode is Import recording mode's permission bits (mode.Perm()),
// which Info returns.
func (fs *Store) ImportMode(name string, mode iofs.FileMode, r io.Reader) (ImportStats, error) {
	return fs.importFile(name, int64(mode.Perm()), r)
}

// importFile is Import with the permission bits perm, or none when perm
// is negative.
func (fs *Store) importFile(name string, perm int64, r io.Reader) (ImportStats, error) {
	var st ImportStats
	before := fs.s.Stats().LogBytes
	ch, err := fs.chunker()
	if err != nil {
		return st, err
	}
	ch.ResetWithBoundaries(r, fs.pol, MinChunk, MaxChunk)
	ch.SetAverageBits(averageBits)
	whole := sha256.New()
	var digests []byte
	for {
		c, err := ch.Next(fs.buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			return st, err
		}
		whole.Write(c.Data)
		d := sha256.Sum256(c.Data)
		key := append(append([]byte(nil), chunkPrefix...), d[:]...)
		stored, err := fs.s.PutIfAbsent(key, c.Data)
		if err != nil {
			return st, err
		}
		if stored {
			st.NewChunks++
			st.NewBytes += int64(len(c.Data))
		}
		st.Chunks++
		st.Bytes += int64(len(c.Data))
		digests = append(digests, d[:]...)
	}
	rec := append([]byte(nil), fileMagic...)
	if perm >= 0 {
		rec = binary.AppendUvarint(append(rec[:0], modeMagic...), uint64(perm))
	}
	rec = binary.AppendUvarint(rec, uint64(st.Bytes))
	rec = whole.Sum(rec)
	rec = binary.AppendUvarint(rec, uint64(st.Chunks))
	rec = append(rec, digests...)
	if len(rec) > store.MaxValueSize {
		return st, fmt.Errorf("filestore: %s is too large: %d chunks", name, st.Chunks)
	}
	key := append(append([]byte(nil), filePrefix...), name...)
	if old, err := fs.s.Get(key); err == nil && bytes.Equal(old, rec) {
		st.Unchanged = true
	} else if err := fs.s.Put(key, rec); err != nil {
		return st, err
	}
	st.StoreBytes = int64(fs.s.Stats().LogBytes - before)
	return st, nil
}

// fileRecord is a decoded file record.
type fileRecord struct {
	size    uint64
	perm    iofs.FileMode
	hasPerm bool
	sum     []byte
	digests []byte
}

func decodeFile(b []byte) (fileRecord, error) {
	var f fileRecord
	switch {
	case bytes.HasPrefix(b, fileMagic):
		b = b[len(fileMagic):]
	case bytes.HasPrefix(b, modeMagic):
		perm, n := binary.Uvarint(b[len(modeMagic):])
		if n <= 0 || perm > uint64(iofs.ModePerm) {
			return f, fmt.Errorf("%w: file record's mode", ErrDamaged)
		}
		f.perm, f.hasPerm, b = iofs.FileMode(perm), true, b[len(modeMagic)+n:]
	default:
		return f, fmt.Errorf("%w: not a file record", ErrDamaged)
	}
	size, n := binary.Uvarint(b)
	if n <= 0 || len(b)-n < sha256.Size {
		return f, fmt.Errorf("%w: file record cut short", ErrDamaged)
	}
	b = b[n:]
	f.size, f.sum, b = size, b[:sha256.Size], b[sha256.Size:]
	count, n := binary.Uvarint(b)
	if n <= 0 || uint64(len(b)-n) != count*sha256.Size {
		return f, fmt.Errorf("%w: file record's chunk list has the wrong length", ErrDamaged)
	}
	f.digests = b[n:]
	return f, nil
}

// Info is what a file record says of its file.
type Info struct {
	Size    uint64
	Perm    iofs.FileMode // its permission bits, when HasPerm
	HasPerm bool          // false for a file imported without a mode
}

// Info returns what the store holds of the file name, without reading
// its chunks; ErrNoFile for a name never imported.
func (fs *Store) Info(name string) (Info, error) {
	rec, err := fs.s.Get(append(append([]byte(nil), filePrefix...), name...))
	if errors.Is(err, store.ErrNotFound) {
		return Info{}, fmt.Errorf("%w: %s", ErrNoFile, name)
	}
	if err != nil {
		return Info{}, err
	}
	f, err := decodeFile(rec)
	if err != nil {
		return Info{}, err
	}
	return Info{Size: f.size, Perm: f.perm, HasPerm: f.hasPerm}, nil
}

// Export writes the file stored under name to w, checking each chunk's
// and the whole file's SHA-256.
func (fs *Store) Export(name string, w io.Writer) error {
	rec, err := fs.s.Get(append(append([]byte(nil), filePrefix...), name...))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoFile, name)
	}
	if err != nil {
		return err
	}
	f, err := decodeFile(rec)
	if err != nil {
		return err
	}
	whole := sha256.New()
	var size uint64
	key := append([]byte(nil), chunkPrefix...)
	for i := 0; i < len(f.digests); i += sha256.Size {
		d := f.digests[i : i+sha256.Size]
		c, err := fs.s.Get(append(key[:len(chunkPrefix)], d...))
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: chunk %x of %s is missing", ErrDamaged, d, name)
		}
		if err != nil {
			return err
		}
		if got := sha256.Sum256(c); !bytes.Equal(got[:], d) {
			return fmt.Errorf("%w: chunk %x of %s does not match its hash", ErrDamaged, d, name)
		}
		whole.Write(c)
		size += uint64(len(c))
		if _, err := w.Write(c); err != nil {
			return err
		}
	}
	if size != f.size || !bytes.Equal(whole.Sum(nil), f.sum) {
		return fmt.Errorf("%w: %s does not match its size and hash", ErrDamaged, name)
	}
	return nil
}

// Stats counts the files and chunks of a store.
type Stats struct {
	Files      int
	FileBytes  uint64 // the files' total size
	Chunks     int
	ChunkBytes uint64 // the distinct chunks' total size
}

// DedupRatio is FileBytes / ChunkBytes: how many times smaller the chunks
// are than the files (1 when nothing repeats).
func (s Stats) DedupRatio() float64 {
	if s.ChunkBytes == 0 {
		return 1
	}
	return float64(s.FileBytes) / float64(s.ChunkBytes)
}

// List calls fn with each file's name and size, in the order first
// imported; it stops when fn returns false. It reads the whole store.
func (fs *Store) List(fn func(name string, size uint64) bool) error {
	var ferr error
	err := fs.s.Range(func(k, v []byte) bool {
		if !bytes.HasPrefix(k, filePrefix) {
			return true
		}
		f, err := decodeFile(v)
		if err != nil {
			ferr = err
			return false
		}
		return fn(string(k[len(filePrefix):]), f.size)
	})
	if err == nil {
		err = ferr
	}
	return err
}

// Stats reads the whole store and counts its files and chunks.
func (fs *Store) Stats() (Stats, error) {
	var st Stats
	var ferr error
	err := fs.s.Range(func(k, v []byte) bool {
		switch {
		case bytes.HasPrefix(k, chunkPrefix):
			st.Chunks++
			st.ChunkBytes += uint64(len(v))
		case bytes.HasPrefix(k, filePrefix):
			f, err := decodeFile(v)
			if err != nil {
				ferr = err
				return false
			}
			st.Files++
			st.FileBytes += f.size
		}
		return true
	})
	if err == nil {
		err = ferr
	}
	return st, err
}
