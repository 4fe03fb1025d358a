// Plan 9 has no ENOSPC, which MemFS returns for a full disk: there is no
// MemFS there, and so no crash tests.

//go:build !plan9

package vfs

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory file system for tests that models what a crash
// keeps: a file's bytes up to its last Sync, and the creations, renames
// and removals up to the directory's last SyncDir. Crash returns the file
// system a restarted process would see, keeping in addition a random
// prefix of what was not synced (possibly torn), as a real disk might.
// It also injects errors: a full disk (SetSpace), failing syncs
// (FailSyncs) and a crash in the middle of a write (CrashAtWrite). It is
// safe for use by any number of goroutines.
type MemFS struct {
	mu      sync.Mutex
	files   map[string]*memFile // the names now
	durable map[string]*memFile // the names as of the last SyncDir
	pending []nsOp              // changes of names since
	locks   map[string]bool
	dirs    map[string]bool // made by MkdirAll (kept across crashes)
	space   int64           // bytes left before writes fail with ENOSPC; < 0: no limit
	syncErr error
	writes  int64 // WriteAt calls, for crash points
	crashAt int64 // when > 0, the WriteAt call that panics with errCrash
	syncs   int64 // file syncs done
	delay   time.Duration
}

// SetSyncDelay makes every file sync take d, as a disk's would.
func (m *MemFS) SetSyncDelay(d time.Duration) { m.mu.Lock(); m.delay = d; m.mu.Unlock() }

// Syncs returns the number of file syncs done.
func (m *MemFS) Syncs() int64 { m.mu.Lock(); defer m.mu.Unlock(); return m.syncs }

type nsOp struct {
	op       byte // 'c' create, 'r' rename, 'd' remove
	from, to string
	f        *memFile
}

type memFile struct {
	data   []byte
	synced int
}

// NewMemFS returns an empty MemFS with no space limit.
func NewMemFS() *MemFS {
	return &MemFS{files: map[string]*memFile{}, durable: map[string]*memFile{}, locks: map[string]bool{}, dirs: map[string]bool{}, space: -1}
}

// SetSpace makes writes fail with ENOSPC once n more bytes are written
// (n < 0: no limit).
func (m *MemFS) SetSpace(n int64) { m.mu.Lock(); m.space = n; m.mu.Unlock() }

// FailSyncs makes every later Sync fail with err (nil: succeed).
func (m *MemFS) FailSyncs(err error) { m.mu.Lock(); m.syncErr = err; m.mu.Unlock() }

// CrashAtWrite makes the n-th WriteAt from now panic with ErrCrash
// before writing, to stop a store at that point (0: never).
func (m *MemFS) CrashAtWrite(n int64) { m.mu.Lock(); m.crashAt = m.writes + n; m.mu.Unlock() }

// ErrCrash is the panic value of a write CrashAtWrite chose.
var ErrCrash = errors.New("vfs: simulated crash")

// Crash returns what a restart after a crash would find: the durable
// names plus a random prefix of the later changes of names, each file
// with its synced bytes plus a random prefix of the rest (whose last
// bytes may be garbage). Locks are released.
func (m *MemFS) Crash(rng *rand.Rand) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := map[string]*memFile{}
	for k, v := range m.durable {
		names[k] = v
	}
	for _, op := range m.pending[:rng.IntN(len(m.pending)+1)] {
		applyOp(names, op)
	}
	n := NewMemFS()
	for d := range m.dirs {
		n.dirs[d] = true
	}
	kept := map[*memFile]*memFile{}
	for name, f := range names {
		c, ok := kept[f]
		if !ok {
			keep := f.synced + rng.IntN(len(f.data)-f.synced+1)
			c = &memFile{data: append([]byte(nil), f.data[:keep]...)}
			if keep > f.synced && rng.IntN(2) == 0 {
				// A torn write: the last bytes kept are garbage.
				for i := max(f.synced, keep-1-rng.IntN(16)); i < keep; i++ {
					c.data[i] = byte(rng.Uint32())
				}
			}
			c.synced = len(c.data)
			kept[f] = c
		}
		n.files[name] = c
		n.durable[name] = c
	}
	return n
}

// ProcessCrash returns what another process finds after this one was
// killed: every byte written and every name as they are, with what is
// synced and durable unchanged (a crash of the machine later loses the
// rest). Locks are released.
func (m *MemFS) ProcessCrash() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := NewMemFS()
	copies := map[*memFile]*memFile{}
	cp := func(f *memFile) *memFile {
		if f == nil {
			return nil
		}
		if c, ok := copies[f]; ok {
			return c
		}
		c := &memFile{data: append([]byte(nil), f.data...), synced: f.synced}
		copies[f] = c
		return c
	}
	for k, f := range m.files {
		n.files[k] = cp(f)
	}
	for k, f := range m.durable {
		n.durable[k] = cp(f)
	}
	for _, op := range m.pending {
		op.f = cp(op.f)
		n.pending = append(n.pending, op)
	}
	for d := range m.dirs {
		n.dirs[d] = true
	}
	return n
}

// CrashLosingUnsynced returns what a restart finds after the worst crash
// Crash models: the durable names, and each file's synced bytes only.
func (m *MemFS) CrashLosingUnsynced() *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := NewMemFS()
	for d := range m.dirs {
		n.dirs[d] = true
	}
	kept := map[*memFile]*memFile{}
	for name, f := range m.durable {
		c, ok := kept[f]
		if !ok {
			c = &memFile{data: append([]byte(nil), f.data[:f.synced]...), synced: f.synced}
			kept[f] = c
		}
		n.files[name] = c
		n.durable[name] = c
	}
	return n
}

func applyOp(names map[string]*memFile, op nsOp) {
	switch op.op {
	case 'c':
		names[op.to] = op.f
	case 'r':
		if f, ok := names[op.from]; ok {
			names[op.to] = f
			delete(names, op.from)
		}
	case 'd':
		delete(names, op.to)
	}
}

// ReadFileBytes returns a file's current bytes, for tests that damage a
// store.
func (m *MemFS) ReadFileBytes(name string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f := m.files[name]; f != nil {
		return append([]byte(nil), f.data...)
	}
	return nil
}

// WriteFileBytes replaces a file's bytes, durably.
func (m *MemFS) WriteFileBytes(name string, b []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := &memFile{data: append([]byte(nil), b...), synced: len(b)}
	m.files[name] = f
	m.durable[name] = f
}

// Clone returns a copy of the file system's current files, all durable.
func (m *MemFS) Clone() *MemFS {
	c := NewMemFS()
	for _, n := range m.Names() {
		c.WriteFileBytes(n, m.ReadFileBytes(n))
	}
	m.mu.Lock()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	m.mu.Unlock()
	return c
}

// Names returns the file names, sorted.
func (m *MemFS) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ns []string
	for k := range m.files {
		ns = append(ns, k)
	}
	sort.Strings(ns)
	return ns
}

// MkdirAll records dir as a directory; it fails where a file has that name.
func (m *MemFS) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[filepath.Clean(dir)] != nil {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
	}
	m.dirs[filepath.Clean(dir)] = true
	return nil
}

// IsDir reports whether name is a directory: one made by MkdirAll, or
// one that holds files.
func (m *MemFS) IsDir(name string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = filepath.Clean(name)
	if m.files[name] != nil {
		return false, nil
	}
	if m.dirs[name] {
		return true, nil
	}
	for k := range m.files {
		if strings.HasPrefix(k, name+"/") {
			return true, nil
		}
	}
	return false, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// Create creates or truncates name. The new name is durable after the
// next SyncDir; its bytes after the file's next Sync.
func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := &memFile{}
	op := nsOp{op: 'c', to: name, f: f}
	applyOp(m.files, op)
	m.pending = append(m.pending, op)
	return &memHandle{fs: m, f: f}, nil
}

// CreateNew creates name as Create does, but fails with an error
// wrapping fs.ErrExist when a file or directory has that name.
func (m *MemFS) CreateNew(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[name] != nil || m.dirs[filepath.Clean(name)] {
		return nil, &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
	}
	f := &memFile{}
	op := nsOp{op: 'c', to: name, f: f}
	applyOp(m.files, op)
	m.pending = append(m.pending, op)
	return &memHandle{fs: m, f: f}, nil
}

// Open opens an existing file.
func (m *MemFS) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.files[name]
	if f == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memHandle{fs: m, f: f}, nil
}

// ReadFile returns a copy of a file's bytes.
func (m *MemFS) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.files[name]
	if f == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return append([]byte(nil), f.data...), nil
}

// Rename renames oldname to newname, replacing newname; durable after the
// next SyncDir.
func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[oldname] == nil {
		return &fs.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	op := nsOp{op: 'r', from: oldname, to: newname}
	applyOp(m.files, op)
	m.pending = append(m.pending, op)
	return nil
}

// Remove removes name; durable after the next SyncDir.
func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files[name] == nil {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	op := nsOp{op: 'd', to: name}
	applyOp(m.files, op)
	m.pending = append(m.pending, op)
	return nil
}

// List returns the names of the files in dir, sorted.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ns []string
	for k := range m.files {
		if filepath.Dir(k) == filepath.Clean(dir) {
			ns = append(ns, strings.TrimPrefix(k, filepath.Clean(dir)+"/"))
		}
	}
	sort.Strings(ns)
	return ns, nil
}

// SyncDir makes every change of names so far durable (for every
// directory: the store keeps one). It fails as FailSyncs says.
func (m *MemFS) SyncDir(string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.syncErr != nil {
		return m.syncErr
	}
	for _, op := range m.pending {
		applyOp(m.durable, op)
	}
	m.pending = nil
	return nil
}

// Lock takes the lock of name in this MemFS: ErrLocked while it is held.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[name] {
		return nil, ErrLocked
	}
	m.locks[name] = true
	return closerFunc(func() error {
		m.mu.Lock()
		delete(m.locks, name)
		m.mu.Unlock()
		return nil
	}), nil
}

// The file systems of this package.
var (
	_ FS = OS{}
	_ FS = (*MemFS)(nil)
)

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

type memHandle struct {
	fs     *MemFS
	f      *memFile
	closed bool
}

func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if off >= int64(len(h.f.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *memHandle) WriteAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.fs.writes++
	if h.fs.crashAt > 0 && h.fs.writes >= h.fs.crashAt {
		h.fs.crashAt = 0
		panic(ErrCrash)
	}
	n := len(p)
	var err error
	if h.fs.space >= 0 && int64(n) > h.fs.space {
		n, err = int(h.fs.space), syscall.ENOSPC
	}
	if h.fs.space >= 0 {
		h.fs.space -= int64(n)
	}
	if need := int(off) + n; need > len(h.f.data) {
		h.f.data = append(h.f.data, make([]byte, need-len(h.f.data))...)
	}
	copy(h.f.data[off:], p[:n])
	return n, err
}

func (h *memHandle) Sync() error {
	h.fs.mu.Lock()
	d := h.fs.delay
	h.fs.mu.Unlock()
	time.Sleep(d)
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.fs.syncErr != nil {
		return h.fs.syncErr
	}
	h.fs.syncs++
	h.f.synced = len(h.f.data)
	return nil
}

func (h *memHandle) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if int(size) < len(h.f.data) {
		if h.fs.space >= 0 {
			h.fs.space += int64(len(h.f.data)) - size
		}
		h.f.data = h.f.data[:size]
	}
	h.f.synced = min(h.f.synced, int(size))
	return nil
}

func (h *memHandle) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	return int64(len(h.f.data)), nil
}

func (h *memHandle) Close() error   { h.closed = true; return nil }
func (h *memHandle) Map(int) []byte { return nil }
