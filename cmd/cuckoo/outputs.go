package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/dedupkit/cuckoo/internal/vfs"
)

// Every file a command writes is replaced atomically (package internal/vfs),
// under an advisory lock on it: a command that reads a file it will
// replace (add, delete, dedup --state) takes the lock before it reads,
// with lockFiles, so that two runs updating one file take turns instead of
// losing an update; other writes take it when they start. The env tracks
// the writes in progress, so that an interrupt can drop them and say which
// files it left unchanged.

// lockFiles takes the locks of paths, files to write, for the rest of the
// run (run releases them), in one order whatever the order given, so that
// two runs locking the same files cannot each wait for the other. A run
// that must wait for another says so on standard error. A directory among
// them is refused before anything is read.
func (e *env) lockFiles(paths ...string) error { return e.lock(checkFileTarget, paths) }

// lockDir takes the lock of a directory that a run fills (store export
// --to), as lockFiles does of files.
func (e *env) lockDir(dir string) error {
	return e.lock(checkTarget, []string{filepath.Join(dir, ".")})
}

// lock is lockFiles and lockDir, with the check of a target.
func (e *env) lock(check func(path string) error, paths []string) error {
	type target struct{ path, key string }
	var ts []target
	for _, p := range paths {
		if p != "" {
			ts = append(ts, target{p, canonical(p)})
		}
	}
	for _, t := range ts {
		if err := check(t.path); err != nil {
			return err
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].key < ts[j].key })
	for _, t := range ts {
		e.mu.Lock()
		_, held := e.locks[t.key]
		e.mu.Unlock()
		if held {
			continue
		}
		l, err := vfs.Acquire(t.path, e.waiting(t.path))
		if err != nil {
			return dataErr("check that the directory exists and is writable", "%v", unwrap(err))
		}
		e.mu.Lock()
		if e.locks == nil {
			e.locks = make(map[string]*vfs.WriterLock)
		}
		e.locks[t.key] = l
		e.mu.Unlock()
	}
	return nil
}

// checkTarget refuses a file to write whose name is a loop of symbolic
// links (ln -s a b; ln -s b a), which the replacement would take for a
// missing file and replace with a regular one. The commands that read
// before they write check with lockFiles, before anything is read or
// written. Other names that do not resolve fail when the replacement
// starts, with its message.
func checkTarget(path string) error {
	if _, err := os.Stat(path); errors.Is(err, syscall.ELOOP) {
		return fileErr(path, err, "")
	}
	return nil
}

// checkFileTarget is checkTarget for a file to write (not a directory
// to fill, which lockFiles also locks: store export --to).
func checkFileTarget(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return dataErr("name a file, such as "+filepath.Join(path, "NAME"), "%s is a directory", path)
	}
	return checkTarget(path)
}

// canonical is the key of a path's lock: absolute, symbolic links
// resolved, so that two spellings of one file share it.
func canonical(path string) string {
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	} else if d, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		path = filepath.Join(d, filepath.Base(path))
	}
	if p, err := filepath.Abs(path); err == nil {
		path = p
	}
	return path
}

// sameTarget reports whether two paths, both given, name one file.
func sameTarget(a, b string) bool { return a != "" && b != "" && canonical(a) == canonical(b) }

// waiting returns what to print when a lock of path is held by another
// process.
func (e *env) waiting(path string) func() {
	return func() {
		fmt.Fprintf(e.stderr, "cuckoo %s: waiting for another run that is writing %s\n", e.cmd, path)
	}
}

// unlockAll releases the locks lockFiles took.
func (e *env) unlockAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.unlockAllLocked()
}

func (e *env) unlockAllLocked() {
	for k, l := range e.locks {
		l.Unlock()
		delete(e.locks, k)
	}
}

// outputFile is a file being replaced atomically, registered with the env
// so that an interrupt removes its temporary file and leaves the target as
// it was. A nil *outputFile is valid: commit and abort do nothing.
type outputFile struct {
	e    *env
	f    *vfs.Replacement
	path string
}

// createOutput starts replacing path, under the lock lockFiles took, or
// else under its own until commit or abort.
func (e *env) createOutput(path string) (*outputFile, error) { return e.startOutput(path, false) }

// startOutput is createOutput, or, underLock, the replacement of one of a
// batch of files under a lock the caller holds (vfs.CreateUnder).
func (e *env) startOutput(path string, underLock bool) (*outputFile, error) {
	if err := checkFileTarget(path); err != nil {
		return nil, err
	}
	e.mu.Lock()
	var l *vfs.WriterLock
	if len(e.locks) > 0 && !underLock { // canonical costs a stat per element of the path
		l = e.locks[canonical(path)]
	}
	e.mu.Unlock()
	var f *vfs.Replacement
	var err error
	switch {
	case underLock:
		f, err = vfs.CreateUnder(path, 0o644)
	case l != nil:
		f, err = l.Create(0o644)
	default:
		f, err = vfs.Create(path, 0o644, e.waiting(path))
	}
	if err != nil {
		return nil, dataErr("check that the directory exists and is writable", "cannot write %s: %v", path, unwrap(err))
	}
	e.mu.Lock()
	if e.pending == nil {
		e.pending = make(map[*vfs.Replacement]string)
	}
	e.pending[f] = path
	e.mu.Unlock()
	return &outputFile{e: e, f: f, path: path}, nil
}

func (o *outputFile) Write(p []byte) (int, error) { return o.f.Write(p) }

// commit puts the file in place, synced.
func (o *outputFile) commit() error { return o.put(true) }

// put puts the file in place; unsynced (sync false), for a caller that
// makes a batch of files durable at once with vfs.SyncWritten.
func (o *outputFile) put(sync bool) error {
	if o == nil {
		return nil
	}
	var err error
	if sync {
		err = o.f.Commit()
	} else {
		err = o.f.CommitUnsynced()
	}
	o.e.mu.Lock()
	if _, ok := o.e.pending[o.f]; ok {
		delete(o.e.pending, o.f)
		if err == nil {
			o.e.written = append(o.e.written, o.path)
		}
	}
	o.e.mu.Unlock()
	if err != nil {
		return dataErr("the previous file, if any, is unchanged", "%v", unwrap(err))
	}
	return nil
}

// abort drops the file; the target stays as it was.
func (o *outputFile) abort() {
	if o == nil {
		return
	}
	o.f.Abort()
	o.e.mu.Lock()
	delete(o.e.pending, o.f)
	o.e.mu.Unlock()
}

// writeFile replaces path atomically with what write writes.
func (e *env) writeFile(path string, write func(w io.Writer) error) error {
	return e.replaceFile(path, newBufWriter(nil), writeMode{}, write)
}

// writeMode is how replaceFile writes a file: by default under its own
// lock and synced, as writeFile does; as one of a batch of files (store
// export --to), under a lock the caller holds (underLock) and put in
// place unsynced, for one vfs.SyncWritten of them all (noSync).
type writeMode struct{ underLock, noSync bool }

// replaceFile replaces path atomically with what write writes, through
// bw (reset to the file; a caller writing many files reuses one).
func (e *env) replaceFile(path string, bw *bufio.Writer, mode writeMode, write func(w io.Writer) error) error {
	o, err := e.startOutput(path, mode.underLock)
	if err != nil {
		return err
	}
	bw.Reset(o)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		o.abort()
		return dataErr("the previous file, if any, is unchanged", "writing %s: %v", path, unwrap(err))
	}
	return o.put(!mode.noSync)
}

func newBufWriter(w io.Writer) *bufio.Writer { return bufio.NewWriterSize(w, 1<<20) }
