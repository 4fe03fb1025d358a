package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/dedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/exactdedup"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filestore"
	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/units"
	"github.com/dedupkit/cuckoo/internal/vfs"
	"github.com/dedupkit/cuckoo/store"
)

const storeHelp = `Usage: cuckoo store put DIR KEY [VALUE]     (VALUE omitted: standard input)
       cuckoo store get|has|del DIR KEY
       cuckoo store stats|compact|check|list DIR
       cuckoo store repair DIR [--dry-run]
       cuckoo store import DIR FILE-OR-DIRECTORY...
       cuckoo store export DIR NAME [-o FILE]
       cuckoo store export DIR --to OUT-DIR [NAME...]

An exact key-value store in the directory DIR (created by the first put or
import; the other subcommands need a store there): an append-only log on
disk and, in RAM, a cuckoo hash table of about 9 bytes per key. Where a
filter says "probably", a store says yes or no (see docs/store.md). In the
store of 'cuckoo dedup --exact-dir DIR', the keys are the lines seen:
'has DIR LINE' says whether dedup has seen LINE, 'del DIR LINE' forgets it.

  put      set KEY to VALUE
  get      print the value of KEY (exit status 1 when absent)
  has      print present or absent (exit status 0 or 1)
  del      delete KEY (exit status 1, silently, when it was absent)
  stats    keys, RAM and disk use; files, chunks and the dedup ratio
  compact  rewrite the live records, reclaiming overwritten and deleted ones
  check    read the whole log and verify every record's checksum, and
           that the index agrees with the log
  repair   cut away damage the other subcommands refuse in the tail of the
           last log file, copying the bytes cut first to a new file beside
           it (named after the log file and the offset); the records from
           the damage on are lost. An index that disagrees with the log
           (check: "the index is wrong, not the log") is rebuilt from the
           log, INDEX removed. A store without damage is left as it
           is; other damage is refused, changing nothing (restore a
           backup). With --dry-run, say what would be cut, changing
           nothing (the files are opened read-only: a read-only copy
           will do). Exit status 0 when the store then opens, 3 when not
  import   store files (directories: every regular file under them) as
           content-defined chunks, each distinct chunk once, under the path
           given, with their permission bits; importing again adds only
           what changed. The summary comes once all is synced; a failure
           says which files were kept. Entries under a directory that are
           not regular files (symbolic links, FIFOs, devices, sockets) are
           skipped and listed on standard error (the exit status stays 0)
  export   write a file imported under NAME, checking every chunk's SHA-256;
           -o FILE gets its permission bits. With --to OUT-DIR, write every
           file named NAME or under NAME/ (all files without a NAME) into
           OUT-DIR at its name, each with its permission bits, in one process
  list     the imported files, with their sizes

Examples:
  cuckoo store put seen.d https://example.com/ "first seen 2026-11-23"
  cuckoo store get seen.d https://example.com/
  cuckoo store has seen.d https://example.org/ || echo "not seen"
  cuckoo store import src.d $(go env GOROOT)/src
  cuckoo store export src.d $(go env GOROOT)/src/fmt/print.go > print.go
  cuckoo store export src.d --to restored $(go env GOROOT)/src/net
  cuckoo store stats src.d
  cuckoo store repair seen.d --dry-run

One process has a store open at a time: a second one fails at once (exit
status 3). Exit status 3 also means a missing, damaged or unwritable store,
a key or value over the limits (1 MiB, 64 MiB), or an export of a name not
imported (with --to, of a NAME no file matches: nothing is written).
`

type storeFlags struct {
	sync   string
	output string
	to     string
	quiet  bool
	dryRun bool
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.sync, "sync", "everysec", "when writes are synced: the `policy` always, everysec or never (the store is synced when the command ends)")
	fs.Var((*nameValue)(&f.output), "o", "export: write to `file` (atomically) instead of standard output")
	fs.Var((*nameValue)(&f.to), "to", "export: write the files named (and those under the names, or all) into `directory`, each atomically")
	fs.BoolVar(&f.quiet, "quiet", false, "import, export --to: no summary")
	fs.BoolVar(&f.quiet, "q", false, "the same as --quiet")
	fs.BoolVar(&f.dryRun, "dry-run", false, "repair: say what would be cut, and change nothing")
}

func storeCommand() *command {
	return newCommand("store", "an exact key-value store on disk; import and export files", storeHelp,
		(*storeFlags).register, runStore)
}

// storeArgs is how many positional arguments each subcommand takes after
// DIR: at least min, at most max (−1: any).
var storeArgs = map[string][2]int{
	"put": {1, 2}, "get": {1, 1}, "has": {1, 1}, "del": {1, 1},
	"stats": {0, 0}, "compact": {0, 0}, "check": {0, 0}, "list": {0, 0}, "repair": {0, 0},
	"import": {1, -1}, "export": {0, -1},
}

// syncPolicies are the store's sync policies, which --sync names as
// their String methods do.
var syncPolicies = []store.SyncPolicy{store.SyncAlways, store.SyncEverySecond, store.SyncNever}

func runStore(e *env, f *storeFlags, pos []string) error {
	const remedy = "see 'cuckoo store --help'"
	if len(pos) == 0 {
		return usageErr(remedy, "give a subcommand and a store directory")
	}
	n, ok := storeArgs[pos[0]]
	if !ok {
		return usageErr(remedy, "unknown store subcommand %q", pos[0])
	}
	if len(pos) < 2 {
		return usageErr(remedy, "give the store directory after %q", pos[0])
	}
	sub, dir, args := pos[0], pos[1], pos[2:]
	if len(args) < n[0] || n[1] >= 0 && len(args) > n[1] {
		return usageErr(remedy, "wrong number of arguments for store %s", sub)
	}
	i := slices.IndexFunc(syncPolicies, func(p store.SyncPolicy) bool { return p.String() == f.sync })
	if i < 0 {
		return usageErr(remedy, "bad --sync value %q: give always, everysec or never", f.sync)
	}
	policy := syncPolicies[i]
	if f.dryRun && sub != "repair" {
		return usageErr(remedy, "--dry-run is a flag of store repair")
	}
	if sub == "repair" {
		return storeRepair(e, f, dir)
	}
	if sub == "put" && len(args) == 1 {
		// The value from standard input, read before the store is opened
		// (or created): a failure leaves no trace.
		if stdinClosed(e.stdinFile) {
			return dataErr("give VALUE as an argument, or its bytes on standard input", "reading the value from standard input: it is closed")
		}
		value, err := io.ReadAll(io.LimitReader(e.stdin, store.MaxValueSize+1))
		if err != nil {
			return dataErr(remedyRead, "reading the value from standard input: %v", err)
		}
		args = append(args, string(value))
	}
	opts := []store.Option{store.WithSync(policy)}
	creates := sub == "put" || sub == "import"
	if !creates {
		opts = append(opts, store.WithMustExist())
	}
	s, err := store.Open(dir, opts...)
	if !creates && errors.Is(err, store.ErrNotStore) {
		return noStoreErr(err)
	}
	if err != nil {
		return storeErr(dir, err)
	}
	err = storeSub(e, f, s, sub, dir, args)
	if cerr := s.Close(); err == nil && cerr != nil {
		err = storeErr(dir, cerr)
	}
	return err
}

// noStoreErr explains an error wrapping store.ErrNotStore of a
// subcommand that does not create a store.
func noStoreErr(err error) error {
	return dataErr("a store is made by 'cuckoo store put DIR KEY VALUE' or 'cuckoo store import DIR FILE'", "%s", notStore(err))
}

// storeRepair is 'store repair': store.Repair, and what it did. The
// exit status is 0 when the store opens afterwards: it had no damage,
// or the damage was cut.
func storeRepair(e *env, f *storeFlags, dir string) error {
	var opts []store.RepairOption
	if f.dryRun {
		opts = append(opts, store.WithDryRun())
	}
	rep, err := store.Repair(dir, opts...)
	var re *store.RepairError
	switch {
	case errors.Is(err, store.ErrNotStore):
		return noStoreErr(err)
	case errors.As(err, &re):
		return notRepairableErr(dir, re)
	case err != nil && rep.Cut:
		return dataErr("the bytes cut are in "+rep.Copy, "%s: %v", dir, unwrap(err))
	case err != nil:
		return storeErr(dir, err)
	}
	out := newBufWriter(e.stdout)
	defer out.Flush()
	if rep.Damage == nil {
		fmt.Fprintf(out, "%s: nothing to repair: the store opens, and every record verifies\n", dir)
		if rep.Torn > 0 {
			fmt.Fprintf(out, "%s: the last %s of %s, from offset %d, are a write a crash cut short, which the next open of the store cuts\n",
				dir, units.Counted(uint64(rep.Torn), "byte"), rep.File, rep.TornAt)
		}
		return nil
	}
	records := "records that cannot be counted"
	switch {
	case rep.Records == 1:
		records = "1 record (the damaged one)"
	case rep.Records > 1:
		records = units.Counted(uint64(rep.Records), "record") + " (the damaged one and those written after it)"
	}
	lost := fmt.Sprintf("%s, %s", units.Counted(uint64(rep.Bytes), "byte"), records)
	d := rep.Damage
	if rep.Index {
		return storeRepairedIndex(out, f, dir, rep)
	}
	if f.dryRun {
		return dataErr("run 'cuckoo store repair "+dir+"' to repair it",
			"%s is damaged: %s at offset %d: %s; repair would cut the file there, losing %s, copied first to %s; nothing was changed (--dry-run)",
			dir, d.File, d.Offset, d.Detail, lost, rep.Copy)
	}
	fmt.Fprintf(out, "%s: repaired: cut %s at offset %d, losing %s, kept in %s\n", dir, rep.File, rep.Offset, lost, rep.Copy)
	fmt.Fprintf(out, "%s: the damage was: %s\n", dir, d.Detail)
	fmt.Fprintf(out, "%s: the store opens, with every record before the offset\n", dir)
	return nil
}

func storeSub(e *env, f *storeFlags, s *store.Store, sub, dir string, args []string) error {
	out := newBufWriter(e.stdout)
	defer out.Flush()
	seenSet, err := exactdedup.IsSeenSet(s)
	if err != nil {
		return storeErr(dir, err)
	}
	// k is the store's key of the KEY argument: in a seen-set of dedup
	// --exact-dir, that of the line KEY. put's value is args[1], read
	// from standard input when it was not given.
	var k []byte
	switch sub {
	case "get", "has", "del", "put":
		k = []byte(args[0])
		if seenSet {
			var ok bool
			if k, ok = exactdedup.StoreKey(k); !ok {
				return usageErr("", "a line of %d bytes is past what a command line holds", len(args[0]))
			}
		}
	}
	switch sub {
	case "put":
		if err := s.Put(k, []byte(args[1])); err != nil {
			return storeErr(dir, err)
		}
	case "get":
		v, err := s.Get(k)
		if errors.Is(err, store.ErrNotFound) {
			return &cliError{code: exitAbsent, msg: fmt.Sprintf("%q: no such key", args[0]), remedy: "'cuckoo store has' tests for a key"}
		}
		if err != nil {
			return storeErr(dir, err)
		}
		out.Write(v)
	case "has":
		ok, err := s.Has(k)
		if err != nil {
			return storeErr(dir, err)
		}
		if !ok {
			fmt.Fprintln(out, "absent")
			return exitCode(exitAbsent)
		}
		fmt.Fprintln(out, "present")
	case "del":
		ok, err := s.Delete(k)
		if err != nil {
			return storeErr(dir, err)
		}
		if !ok {
			return exitCode(exitAbsent)
		}
	case "stats":
		return storeStats(out, s, dir, seenSet)
	case "compact":
		before := s.Stats()
		start := time.Now()
		if err := s.Compact(); err != nil {
			return storeErr(dir, err)
		}
		after := s.Stats()
		fmt.Fprintf(out, "compacted %s: log %s -> %s in %.2f s\n", dir, units.Bytes(before.LogBytes), units.Bytes(after.LogBytes), time.Since(start).Seconds())
	case "check":
		if err := s.Verify(); err != nil {
			return storeErr(dir, err)
		}
		st := s.Stats()
		fmt.Fprintf(out, "%s: ok: every record's checksum verified, and the index agrees with the log; %s, log %s\n", dir, units.Counted(st.Keys, "key"), units.Bytes(st.LogBytes))
	case "list":
		fst, err := filestore.New(s)
		if err != nil {
			return storeErr(dir, err)
		}
		if err := fst.List(func(name string, size uint64) bool {
			fmt.Fprintf(out, "%d\t%s\n", size, name)
			return true
		}); err != nil {
			return storeErr(dir, err)
		}
	case "import":
		return storeImport(e, out, f, s, dir, args)
	case "export":
		return storeExport(e, out, f, s, dir, args)
	}
	return nil
}

// storeExport is 'store export': one file to standard output or -o, or
// with --to, the files named or under the names given (all without one)
// into a directory, each with the permission bits it was imported with.
func storeExport(e *env, out io.Writer, f *storeFlags, s *store.Store, dir string, names []string) error {
	fst, err := filestore.New(s)
	if err != nil {
		return storeErr(dir, err)
	}
	noFile := func(name string) error {
		return dataErr("'cuckoo store list "+dir+"' lists the files", "%s holds no file %q", dir, name)
	}
	if f.to == "" {
		if len(names) != 1 {
			return usageErr("give --to DIR to export several files, or those under a directory name",
				"store export without --to writes one file")
		}
		name, err := findFile(fst, names[0])
		if errors.Is(err, filestore.ErrNoFile) {
			return noFile(names[0])
		}
		if err != nil {
			return storeErr(dir, err)
		}
		info, err := fst.Info(name)
		if err != nil {
			return storeErr(dir, err)
		}
		if f.output == "" {
			if err := fst.Export(name, out); err != nil {
				return storeErr(dir, err)
			}
			return nil
		}
		if err := e.writeFile(f.output, func(w io.Writer) error { return fst.Export(name, w) }); err != nil {
			return err
		}
		return setPerm(f.output, info)
	}
	if f.output != "" {
		return usageErr("see 'cuckoo store --help'", "-o and --to exclude each other")
	}
	// The files to write, in the order first imported, each to its path
	// under --to: its name rooted and cleaned, so that no ".." climbs out.
	type target struct{ name, path string }
	var targets []target
	matched := make([]bool, len(names))
	byPath := map[string]string{}
	var clash error
	err = fst.List(func(name string, size uint64) bool {
		i := slices.IndexFunc(names, func(p string) bool { return fileUnder(name, p) })
		if i < 0 && len(names) > 0 {
			return true
		}
		if i >= 0 {
			matched[i] = true
		}
		p := filepath.Join(f.to, filepath.FromSlash(path.Clean("/"+name)))
		if other, ok := byPath[p]; ok {
			clash = usageErr("export them one at a time with -o", "the files %q and %q would both be written to %s", other, name, p)
			return false
		}
		byPath[p] = name
		targets = append(targets, target{name, p})
		return true
	})
	if err != nil {
		return storeErr(dir, err)
	}
	if clash != nil {
		return clash
	}
	for i, ok := range matched {
		if !ok {
			return dataErr("'cuckoo store list "+dir+"' lists the files", "%s holds no file %q, nor files under it", dir, names[i])
		}
	}
	// Each file is put in place atomically; they are made durable all at
	// once at the end (two fsyncs per file would take most of the time),
	// or each before its rename with --sync always. One lock of OUT keeps
	// another export out, rather than a lock file made and removed for
	// each file.
	eachSynced := f.sync == store.SyncAlways.String()
	if err := os.MkdirAll(f.to, 0o755); err != nil {
		return dataErr(remedyWrite, "%v", unwrap(err))
	}
	if err := e.lockDir(f.to); err != nil {
		return err
	}
	mode := writeMode{underLock: true, noSync: !eachSynced}
	var written []string
	bw := newBufWriter(nil)
	made := map[string]bool{} // directories made
	var bytesOut uint64
	err = func() error {
		for _, t := range targets {
			info, err := fst.Info(t.name)
			if err != nil {
				return storeErr(dir, err)
			}
			if d := filepath.Dir(t.path); !made[d] {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return dataErr(remedyWrite, "%v (%s written)", err, units.Counted(uint64(len(written)), "file"))
				}
				made[d] = true
			}
			if err := e.replaceFile(t.path, bw, mode, func(w io.Writer) error { return fst.Export(t.name, w) }); err != nil {
				return err
			}
			written = append(written, t.path)
			if err := setPerm(t.path, info); err != nil {
				return err
			}
			bytesOut += info.Size
		}
		return nil
	}()
	if !eachSynced {
		if serr := vfs.SyncWritten(written); err == nil && serr != nil {
			err = dataErr(remedyWrite, "%v (%s written, not all synced)", unwrap(serr), units.Counted(uint64(len(written)), "file"))
		}
	}
	if err != nil {
		return err
	}
	if !f.quiet {
		fmt.Fprintf(out, "exported %s, %s, to %s\n", units.Counted(uint64(len(targets)), "file"), units.Bytes(bytesOut), f.to)
	}
	return nil
}

// fileName is the name a file given as path is imported under, and
// the form of a NAME that export matches: the path cleaned (no "./", no
// trailing "/", "a/../b" as "b"), with slashes, so that "./tree/a.txt",
// "tree//a.txt" and "tree/a.txt" name one file.
func fileName(path string) string { return filepath.ToSlash(filepath.Clean(path)) }

// fileUnder reports whether the file imported as name is NAME or under it
// as a directory, both compared as fileName gives them (a store imported
// by an older version may hold names as they were given). The NAME "."
// is every relative name.
func fileUnder(name, NAME string) bool {
	name, NAME = fileName(name), fileName(NAME)
	switch {
	case name == NAME:
		return true
	case NAME == ".":
		return !strings.HasPrefix(name, "/") && name != ".." && !strings.HasPrefix(name, "../")
	case NAME == "/":
		return strings.HasPrefix(name, "/")
	}
	return strings.HasPrefix(name, NAME+"/")
}

// findFile returns the name under which the store holds the file NAME
// names: NAME as fileName gives it, or as given, or, in a store imported
// by an older version, which kept names as given, one that fileName
// makes equal to it; filestore.ErrNoFile when there is none.
func findFile(fst *filestore.Store, NAME string) (string, error) {
	for _, n := range []string{fileName(NAME), NAME} {
		if _, err := fst.Info(n); !errors.Is(err, filestore.ErrNoFile) {
			return n, err
		}
	}
	found := ""
	err := fst.List(func(name string, size uint64) bool {
		if fileName(name) == fileName(NAME) {
			found = name
			return false
		}
		return true
	})
	if err == nil && found == "" {
		err = filestore.ErrNoFile
	}
	return found, err
}

// setPerm gives an exported file the permission bits it was imported
// with; a file imported without them keeps those of its creation.
func setPerm(path string, info filestore.Info) error {
	if !info.HasPerm {
		return nil
	}
	if err := os.Chmod(path, info.Perm); err != nil {
		return dataErr(remedyWrite, "%v", unwrap(err))
	}
	return nil
}

func storeStats(w io.Writer, s *store.Store, dir string, seenSet bool) error {
	st := s.Stats()
	perKey := 0.0
	if st.Keys > 0 {
		perKey = float64(st.IndexBytes) / float64(st.Keys)
	}
	fmt.Fprintf(w, "keys:       %s\n", units.Count(st.Keys))
	fmt.Fprintf(w, "index:      %s in RAM (%.2f bytes per key, %.1f %% of slots used)\n", units.Bytes(st.IndexBytes), perKey, 100*st.IndexLoad)
	fmt.Fprintf(w, "log:        %s in %s, %s live (%.1f %% garbage)\n", units.Bytes(st.LogBytes), units.Counted(uint64(st.LogFiles), "log file"),
		units.Bytes(st.LiveBytes), 100*(1-float64(st.LiveBytes)/max(1, float64(st.LogBytes))))
	if seenSet {
		fmt.Fprintf(w, "seen-set:   the lines of 'cuckoo dedup --exact-dir %s' (one more key marks it)\n", dir)
	}
	fst, err := filestore.New(s)
	if err != nil {
		return storeErr(dir, err)
	}
	fstat, err := fst.Stats()
	if err != nil {
		return storeErr(dir, err)
	}
	if fstat.Files > 0 {
		fmt.Fprintf(w, "files:      %s, %s\n", units.Count(uint64(fstat.Files)), units.Bytes(fstat.FileBytes))
		fmt.Fprintf(w, "chunks:     %s distinct, %s\n", units.Count(uint64(fstat.Chunks)), units.Bytes(fstat.ChunkBytes))
		fmt.Fprintf(w, "dedup:      %.3f (file bytes / chunk bytes)\n", fstat.DedupRatio())
	}
	return nil
}

// importSyncEvery is how much a store may grow during an import between
// syncs: what a failure may leave uncertain.
const importSyncEvery = 64 << 20

func storeImport(e *env, out io.Writer, f *storeFlags, s *store.Store, dir string, args []string) error {
	fst, err := filestore.New(s)
	if err != nil {
		return storeErr(dir, err)
	}
	var files, unchanged, kept int
	var bytesIn, newBytes, grew, unsynced int64
	var lastKept string
	// failed explains an error: which files the store keeps for certain
	// (those before the last sync), and how to finish.
	failed := func(what string, err error) error {
		remedy := "no file is stored for certain; run the same import again once that is fixed"
		if kept > 0 {
			remedy = fmt.Sprintf("the first %s are stored, up to %s; run the same import again once that is fixed: it adds only what is missing",
				units.Counted(uint64(kept), "file"), lastKept)
		}
		return dataErr(remedy, "%s: %v", what, unwrap(err))
	}
	importOne := func(path string, mode fs.FileMode) error {
		r, err := os.Open(path)
		if err != nil {
			return fileErr(path, err, "check the name")
		}
		defer r.Close()
		st, err := fst.ImportMode(fileName(path), mode, r)
		if err != nil {
			return failed("importing "+path, err)
		}
		files++
		bytesIn += st.Bytes
		newBytes += st.NewBytes
		grew += st.StoreBytes
		unsynced += st.StoreBytes
		if st.Unchanged {
			unchanged++
		}
		if unsynced >= importSyncEvery {
			if err := s.Sync(); err != nil {
				return failed("syncing "+dir, err)
			}
			kept, lastKept, unsynced = files, path, 0
		}
		return nil
	}
	// skipped are the entries under a directory that are neither regular
	// files nor directories: symbolic links (not followed), FIFOs,
	// devices, sockets; reported at the end.
	var skipped []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return fileErr(a, err, "check the name")
		}
		if !fi.IsDir() {
			if err := importOne(a, fi.Mode()); err != nil {
				return err
			}
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return fileErr(p, err, remedyRead)
			}
			switch {
			case d.Type().IsRegular():
				info, err := d.Info()
				if err != nil {
					return fileErr(p, err, remedyRead)
				}
				return importOne(p, info.Mode())
			case !d.IsDir():
				skipped = append(skipped, fmt.Sprintf("%s (%s)", p, entryKind(d.Type())))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// The summary says the files are stored: only once they are synced.
	if err := s.Sync(); err != nil {
		return failed("syncing "+dir, err)
	}
	if !f.quiet {
		fmt.Fprintf(out, "imported %s, %s (%s unchanged); new chunk data %s; the store grew by %s\n",
			units.Counted(uint64(files), "file"), units.Bytes(uint64(bytesIn)), units.Count(uint64(unchanged)), units.Bytes(uint64(newBytes)), units.Bytes(uint64(grew)))
	}
	if len(skipped) > 0 {
		what := units.Count(uint64(len(skipped))) + " entries that are not regular files or directories"
		if len(skipped) == 1 {
			what = "1 entry that is not a regular file or a directory"
		}
		fmt.Fprintf(e.stderr, "cuckoo store import: skipped %s (a symbolic link given itself is followed):\n", what)
		for _, s := range skipped {
			fmt.Fprintf(e.stderr, "cuckoo store import: skipped %s\n", s)
		}
	}
	return nil
}

// entryKind names the type of a directory entry that import skips.
func entryKind(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "FIFO"
	case t&fs.ModeCharDevice != 0:
		return "character device"
	case t&fs.ModeDevice != 0:
		return "device"
	case t&fs.ModeSocket != 0:
		return "socket"
	}
	return "irregular file"
}

// storeRepairedIndex reports a repair of a wrong index (rep.Index):
// INDEX removed, or, with --dry-run, to be removed.
func storeRepairedIndex(out io.Writer, f *storeFlags, dir string, rep store.RepairReport) error {
	d := rep.Damage
	if f.dryRun {
		return dataErr("run 'cuckoo store repair "+dir+"' to repair it",
			"%s is damaged: %s at offset %d: %s; repair would remove %s, so that the store rebuilds its index from the log, which is intact; nothing was changed (--dry-run)",
			dir, d.File, d.Offset, d.Detail, rep.File)
	}
	fmt.Fprintf(out, "%s: repaired: removed %s, an index checkpoint that disagreed with the log; the next open rebuilds the index from the log\n", dir, rep.File)
	fmt.Fprintf(out, "%s: the damage was: %s at offset %d: %s\n", dir, d.File, d.Offset, d.Detail)
	fmt.Fprintf(out, "%s: the store opens, with every record, and verifies\n", dir)
	return nil
}

// notStore is the message of an error wrapping store.ErrNotStore: what
// the path is instead.
func notStore(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, store.ErrNotStore.Error()+": "); i >= 0 {
		msg = msg[i+len(store.ErrNotStore.Error())+2:]
	}
	return "not a store: " + msg
}

// notRepairableErr explains damage that no repair cuts away (the store
// package's *RepairError), which Repair and, for a store whose manifest
// is lost, Open return: every subcommand says the same.
func notRepairableErr(dir string, re *store.RepairError) error {
	d := re.Damage
	return dataErr("restore the store from a backup (docs/store.md, \"Repairing a refused tail\")",
		"%s is damaged: %s at offset %d: %s; repair cannot cut it away: %s; nothing was changed", dir, d.File, d.Offset, d.Detail, re.Reason)
}

// storeErr explains an error of the store package.
func storeErr(dir string, err error) error {
	var ce *store.CorruptError
	var re *store.RepairError
	switch {
	case errors.As(err, &re):
		return notRepairableErr(dir, re)
	case errors.Is(err, store.ErrLocked):
		return dataErr("wait for the other process to close it", "%s is open in another process", dir)
	case errors.Is(err, store.ErrNotStore):
		return dataErr("give a new or empty directory, or a store", "%s", notStore(err))
	case errors.Is(err, exactdedup.ErrNotSeenSet):
		return dataErr("give --exact-dir a directory of its own", "%s: %v", dir, unwrap(err))
	case errors.As(err, &ce):
		return dataErr("run 'cuckoo store repair "+dir+"': it cuts damage in the tail of the last log file away, keeping a copy, and says when the store must be restored from a backup instead", "%s is damaged: %s at offset %d: %s", dir, ce.File, ce.Offset, ce.Detail)
	case errors.Is(err, store.ErrTooLarge):
		return dataErr(fmt.Sprintf("keys hold up to %d bytes, values %d", store.MaxKeySize, store.MaxValueSize), "%v", unwrap(err))
	}
	return dataErr(remedyWrite, "%s: %v", dir, unwrap(err))
}

// exactFlags are the flags of 'cuckoo dedup --exact'.
type exactFlags struct {
	exact bool
	dir   string
}

func (f *exactFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.exact, "exact", false, "exact: no line dropped wrongly, at any size; seen lines go to a scratch file in a temporary directory (9 to 19 bytes of RAM per distinct line)")
	fs.Var((*nameValue)(&f.dir), "exact-dir", "--exact, keeping the seen lines in the store `dir` (created if needed): its lines count as seen in later runs")
}

func (f *exactFlags) on() bool { return f.exact || f.dir != "" }

// runExactDedup is 'cuckoo dedup --exact'.
func runExactDedup(e *env, f *dedupFlags, keyer *dedup.KeyExtractor, ins []input) error {
	const remedy = "--exact keeps its own exact seen-set; drop the filter flags (use --exact-dir to keep it)"
	if f.filter.anySet() || f.save != "" || f.load != "" || f.state != "" {
		return usageErr(remedy, "--exact takes none of --capacity, --fpr, --grow, --bloom, --save, --load, --state")
	}
	out := e.stdout
	var outFile *outputFile
	var err error
	if f.output != "" {
		if outFile, err = e.createOutput(f.output); err != nil {
			return err
		}
		out = outFile
	}
	bar := e.startBar("dedup", totalSize(ins), f.quiet, f.output == "" && !f.count)
	var lines uint64
	if f.exact.dir == "" {
		if lines, _, err = estimateLines(e, ins); err != nil {
			outFile.abort()
			return err
		}
	}
	d, err := exactdedup.New(out, exactdedup.Config{Dir: f.exact.dir, Lines: lines, Key: keyer, Duplicates: f.duplicates, CountOnly: f.count, OnRead: bar.AddChunk})
	if err != nil {
		outFile.abort()
		if f.exact.dir == "" {
			// The scratch file, in os.TempDir(): its error names the path.
			return dataErr("set TMPDIR to a directory that exists and has free space, or keep the seen lines in a directory with --exact-dir DIR",
				"creating --exact's scratch file: %v", withoutPrefixes(err.Error()))
		}
		return storeErr(f.exact.dir, err)
	}
	// An interrupt writes the lines decided so far and closes the store,
	// so that a kept store holds no line that was not printed, and a
	// temporary one is removed.
	defer e.atInterrupt(func() string {
		if err := d.Stop(); err != nil {
			return fmt.Sprintf("the store of seen lines: %v", err)
		}
		return ""
	})()
	start := time.Now()
	runErr := func() error {
		for i := range ins {
			r, closeIn, err := ins[i].open(e)
			if err != nil {
				return err
			}
			err = d.Run(r)
			closeIn()
			if errors.Is(err, exactdedup.ErrStopped) {
				e.halt() // an interrupt stopped the run, and exits
			}
			if errors.Is(err, exactdedup.ErrOutput) {
				return dataErr(remedyWrite, "writing the output: %v", cause(err))
			}
			if err != nil {
				return dataErr("check the input and the free space of the store's disk", "%s: %v", ins[i].name, unwrap(err))
			}
		}
		return nil
	}()
	flushErr := d.Flush()
	e.stopBar()
	st := d.Stats()
	closeErr := d.Close()
	if runErr == nil && flushErr != nil {
		runErr = dataErr(remedyWrite, "writing the output: %v", cause(flushErr))
	}
	if runErr == nil && closeErr != nil {
		runErr = storeErr(f.exact.dir, closeErr)
	}
	if runErr != nil {
		outFile.abort()
		return runErr
	}
	if f.count {
		fmt.Fprintln(out, st.LinesIn-st.Distinct)
	}
	if err := outFile.commit(); err != nil {
		return err
	}
	if f.stats {
		secs := max(time.Since(start).Seconds(), 1e-9)
		fmt.Fprintf(e.stderr, "cuckoo dedup: %s in (%s), %s out, %s dropped as repeats (exact)\n",
			units.Counted(st.LinesIn, "line"), units.Bytes(st.BytesIn), units.Count(st.LinesOut), units.Count(st.LinesIn-st.Distinct))
		fmt.Fprintf(e.stderr, "cuckoo dedup: index %s (%.2f bytes per distinct line), log %s\n",
			units.Bytes(st.IndexBytes), float64(st.IndexBytes)/max(1, float64(st.Keys)), units.Bytes(st.LogBytes))
		if f.exact.dir == "" {
			fmt.Fprintf(e.stderr, "cuckoo dedup: the log was read %s times (for lines seen before, in earlier blocks, not among the lines and pages of it kept in memory)\n",
				units.Count(st.LogReads))
		}
		fmt.Fprintf(e.stderr, "cuckoo dedup: %.2f s, %s lines/s\n", secs, units.SI(float64(st.LinesIn)/secs))
	}
	return nil
}
