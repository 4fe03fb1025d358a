package store_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/store"
)

// files returns every file of fs with its bytes.
func files(fs *store.MemFS) map[string]string {
	m := map[string]string{}
	for _, n := range fs.Names() {
		m[n] = string(fs.ReadFileBytes(n))
	}
	return m
}

// unchanged fails unless fs holds exactly the files of before.
func unchanged(t *testing.T, fs *store.MemFS, before map[string]string, what string) {
	t.Helper()
	after := files(fs)
	for n, b := range before {
		if a, ok := after[n]; !ok || a != b {
			t.Fatalf("%s: %s changed (%d bytes, was %d; present %v)", what, n, len(a), len(b), ok)
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			t.Fatalf("%s: %s was created", what, n)
		}
	}
}

// repaired checks a Repair that cut file at start: the report, the copy
// holding exactly the bytes from start on, the log file cut there, and
// a store that opens with want and, when write, takes a write and opens
// with it.
func repaired(t *testing.T, fs *store.MemFS, rep store.RepairReport, err error, file string, damaged []byte, start int, records int64, want map[string]string, write bool, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: Repair: %v", what, err)
	}
	wantCopy := fmt.Sprintf("%s.cut-%d", file, start)
	if rep.Damage == nil || rep.Damage.File != file || rep.Damage.Offset != int64(start) || !rep.Cut ||
		rep.File != file || rep.Offset != int64(start) || rep.Bytes != int64(len(damaged)-start) || rep.Records != records || rep.Copy != wantCopy {
		t.Fatalf("%s: report %+v; want %s cut at %d, %d bytes, %d records, copied to %s", what, rep, file, start, len(damaged)-start, records, wantCopy)
	}
	// What a crash right after Repair returned leaves: the synced bytes.
	crashed := fs.CrashLosingUnsynced()
	for _, f := range []*store.MemFS{fs, crashed} {
		if got := f.ReadFileBytes(rep.Copy); !bytes.Equal(got, damaged[start:]) {
			t.Fatalf("%s: the copy holds %d bytes, want the %d from the offset on", what, len(got), len(damaged)-start)
		}
		if got := f.ReadFileBytes(file); !bytes.Equal(got, damaged[:start]) {
			t.Fatalf("%s: the log file is %d bytes after Repair, want the %d before the offset", what, len(got), start)
		}
	}
	expectState(t, fs, want, what+", repaired")
	if !write {
		return
	}
	s, err := store.Open("db", store.WithFS(fs))
	if err != nil {
		t.Fatalf("%s: reopened: %v", what, err)
	}
	if err := s.Put([]byte("after the repair"), []byte("a write")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	w := maps(want)
	w["after the repair"] = "a write"
	expectState(t, fs, w, what+", repaired, then a write")
}

// TestRepairFlippedLastRecord: for the flips of the last record of
// TestFlippedLastRecord, which Open refuses, Repair cuts the log file at
// the record, keeps the bytes cut in a copy, and the store then opens
// with every record before it and takes writes. The quick run flips one
// bit of each byte (210 repairs), the long run every bit (1,680).
func TestRepairFlippedLastRecord(t *testing.T) {
	t.Parallel()
	n := 0
	eachLastRecordFlip(t, func(cs crashState, fs *store.MemFS, b []byte, at, bit int, what string) {
		if !testlong.Enabled() && bit != at%8 {
			return
		}
		rep, err := store.Repair("db", store.WithRepairFS(fs))
		// A write after the repair: at each byte in the long run, at
		// every 8th in the quick run.
		write := testlong.Enabled() || (at-cs.start)%8 == 0
		repaired(t, fs, rep, err, cs.file, b, cs.start, 1, cs.before, write, what)
		n++
	})
	t.Logf("%d repairs", n)
}

// TestRepairMidTail: a damaged record past the checkpoint with intact
// records after it (a flipped bit in its value, or in its size field) is
// refused by Open; Repair cuts it with the records after it, and counts
// them.
func TestRepairMidTail(t *testing.T) {
	t.Parallel()
	cs := crashedStore(t, "put", true)
	full := cs.fs.ReadFileBytes(cs.file)
	ends := store.RecordEnds(full)
	start := int(ends[7]) // the 9th record, of key-08; the checkpoint covers 6
	want := map[string]string{}
	for k, v := range cs.before {
		if k < "key-08" {
			want[k] = v
		}
	}
	for _, at := range []int{start + 4, start + 20, int(ends[8]) - 1} {
		what := fmt.Sprintf("byte %d of the 9th of 13 records flipped", at-start)
		fs := cs.fs.Clone()
		b := bytes.Clone(full)
		b[at] ^= 1
		fs.WriteFileBytes(cs.file, b)
		_, err := store.Open("db", store.WithFS(fs))
		refused(t, err, cs.file, start, what)
		rep, err := store.Repair("db", store.WithRepairFS(fs))
		repaired(t, fs, rep, err, cs.file, b, start, 5, want, true, what)
	}
}

// TestRepairCountsRecordsBeforeTornTail: a damaged record with intact
// records after it and a torn write at the end of the file (a crash cut
// the last write short): Repair cuts from the damaged record on and
// counts it and the intact records, not -1 ("cannot be counted"), which
// the previous version reported because the records did not run to the
// end of the file.
func TestRepairCountsRecordsBeforeTornTail(t *testing.T) {
	t.Parallel()
	cs := crashedStore(t, "put", false)
	full := cs.fs.ReadFileBytes(cs.file)
	ends := store.RecordEnds(full)
	start := int(ends[9]) // the 11th of 13 records, of key-10
	b := bytes.Clone(full)
	b[start+20] ^= 1
	b = append(b, full[ends[10]:ends[10]+15]...) // a record's first 15 bytes
	fs := cs.fs.Clone()
	fs.WriteFileBytes(cs.file, b)
	_, err := store.Open("db", store.WithFS(fs))
	refused(t, err, cs.file, start, "a damaged record, two intact ones, a torn write")
	want := map[string]string{}
	for k, v := range cs.before {
		if k < "key-10" {
			want[k] = v
		}
	}
	rep, err := store.Repair("db", store.WithRepairFS(fs))
	repaired(t, fs, rep, err, cs.file, b, start, 3, want, true, "a damaged record, two intact ones, a torn write")
}

// TestRepairCountsRecordsAfterDamagedSizeField: a record whose size
// field has one bit flipped so that it names the next record's bytes as
// its own (the next record is 64 bytes, the flipped bit 64): Repair
// counts the record the damaged size field spans, as its checksum proves
// the size field with that bit flipped back. The previous version
// followed the damaged size field, which leads through intact records to
// the end of the file too, and counted one record fewer.
func TestRepairCountsRecordsAfterDamagedSizeField(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithSync(store.SyncAlways), store.WithSeed(5))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A record of a 2-byte key and a value of n bytes is 13+n bytes.
	sizes := []int{36, 36, 64, 36, 36}
	for i, size := range sizes {
		if err := s.Put(fmt.Appendf(nil, "r%d", i), bytes.Repeat([]byte{'a' + byte(i)}, size-13)); err != nil {
			t.Fatal(err)
		}
	}
	crashed := fs.ProcessCrash()
	file := logFilePath(crashed)
	b := crashed.ReadFileBytes(file)
	if ends := store.RecordEnds(b); len(ends) != len(sizes) || ends[0] != 40+36 || ends[2] != 40+36+36+64 {
		t.Fatalf("records end at %v", ends)
	}
	start := 40 + 36
	b[start+4] ^= 64 // the size field of r1: 28, now 92 = 28 + 64
	crashed.WriteFileBytes(file, b)
	_, err = store.Open("db", store.WithFS(crashed))
	refused(t, err, file, start, "a size field damaged to span the next record")
	rep, err := store.Repair("db", store.WithRepairFS(crashed))
	repaired(t, crashed, rep, err, file, b, start, 4, map[string]string{"r0": strings.Repeat("a", 23)}, true, "a size field damaged to span the next record")
}

// TestRepairChangesNothing: a store Open accepts, after a Close or a
// crash, and a torn tail, which Open cuts itself, are left byte for byte
// as they were; so is a damaged store under WithDryRun, which reports
// what Repair then does.
func TestRepairChangesNothing(t *testing.T) {
	t.Parallel()
	closed := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(closed))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		s.Put(fmt.Appendf(nil, "key %d", i), []byte("value"))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cs := crashedStore(t, "put", true)
	full := cs.fs.ReadFileBytes(cs.file)
	torn := cs.fs.Clone()
	torn.WriteFileBytes(cs.file, full[:cs.start+5])
	// What a crash in a rotation or a checkpoint leaves, which Open
	// removes: a log file no manifest lists, INDEX.tmp, MANIFEST.tmp.
	leftovers := cs.fs.Clone()
	leftovers.WriteFileBytes("db/00000000000000ff.log", full[:40])
	leftovers.WriteFileBytes("db/INDEX.tmp", []byte("a checkpoint never renamed"))
	leftovers.WriteFileBytes("db/MANIFEST.tmp", []byte("a manifest never renamed"))
	for _, c := range []struct {
		what string
		fs   *store.MemFS
		torn int64
	}{{"after Close", closed, 0}, {"after a crash", cs.fs.Clone(), 0}, {"a torn tail", torn, 5}, {"files a crash left", leftovers, 0}} {
		for _, dry := range []bool{false, true} {
			what := fmt.Sprintf("%s, dry run %v", c.what, dry)
			before := files(c.fs)
			opts := []store.RepairOption{store.WithRepairFS(c.fs)}
			if dry {
				opts = append(opts, store.WithDryRun())
			}
			rep, err := store.Repair("db", opts...)
			if err != nil || rep.Damage != nil || rep.Cut || rep.Copy != "" || rep.Torn != c.torn {
				t.Fatalf("%s: Repair: %+v, %v; want no damage and %d torn bytes", what, rep, err, c.torn)
			}
			if c.torn > 0 && (rep.File != cs.file || rep.TornAt != int64(cs.start)) {
				t.Fatalf("%s: the torn tail reported at %s %d, want %s %d", what, rep.File, rep.TornAt, cs.file, cs.start)
			}
			unchanged(t, c.fs, before, what)
		}
	}

	// A dry run of a repair: the report of the repair, and no change.
	fs := cs.fs.Clone()
	b := bytes.Clone(full)
	b[len(b)-1] ^= 4
	fs.WriteFileBytes(cs.file, b)
	before := files(fs)
	dry, err := store.Repair("db", store.WithRepairFS(fs), store.WithDryRun())
	if err != nil || dry.Cut {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	unchanged(t, fs, before, "dry run of a repair")
	rep, err := store.Repair("db", store.WithRepairFS(fs))
	repaired(t, fs, rep, err, cs.file, b, cs.start, 1, cs.before, true, "after the dry run")
	rep.Cut = false
	if fmt.Sprint(dry) != fmt.Sprint(rep) {
		t.Fatalf("the dry run reported %+v, the repair %+v", dry, rep)
	}
}

// isRefusal fails unless err is Repair's refusal of damage, naming file.
func isRefusal(t *testing.T, err error, file, what string) {
	t.Helper()
	var re *store.RepairError
	if !errors.Is(err, store.ErrNotRepairable) || !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &re) {
		t.Fatalf("%s: Repair: %v; want a refusal (ErrNotRepairable, ErrCorrupt)", what, err)
	}
	if re.Damage.File != file {
		t.Fatalf("%s: the refusal names %s, want %s: %v", what, re.Damage.File, file, err)
	}
	t.Logf("%s: %v", what, err)
}

// TestRepairRefuses: damage a cut of the last log file's tail does not
// repair (in a sealed log file, in records the checkpoint covers, a last
// log file shorter than the checkpoint recorded, a damaged manifest) is
// refused, and every file left as it was.
func TestRepairRefuses(t *testing.T) {
	t.Parallel()
	try := func(fs *store.MemFS, file, what string) {
		t.Helper()
		before := files(fs)
		for _, dry := range []bool{false, true} {
			opts := []store.RepairOption{store.WithRepairFS(fs)}
			if dry {
				opts = append(opts, store.WithDryRun())
			}
			rep, err := store.Repair("db", opts...)
			isRefusal(t, err, file, what)
			if rep.Cut || rep.Copy != "" {
				t.Fatalf("%s: refused, but reports %+v", what, rep)
			}
			unchanged(t, fs, before, what)
		}
	}

	// A sealed log file, read by Open (no checkpoint) or not (Close's).
	sealed := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(sealed), store.WithLogFileSize(4<<10), store.WithSeed(3))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		s.Put(fmt.Appendf(nil, "key %d", i), bytes.Repeat([]byte("v"), 40))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range sealed.Names() {
		if filepath.Ext(n) == ".log" {
			logs = append(logs, n)
		}
	}
	if len(logs) < 3 {
		t.Fatalf("%d log files", len(logs))
	}
	for _, dropIndex := range []bool{false, true} {
		fs := sealed.Clone()
		b := fs.ReadFileBytes(logs[0])
		b[len(b)-3] ^= 1 // the last record of the first log file
		fs.WriteFileBytes(logs[0], b)
		if dropIndex {
			fs.Remove("db/INDEX")
		}
		try(fs, logs[0], fmt.Sprintf("a sealed log file, INDEX removed %v", dropIndex))
	}

	// The records of the last log file the checkpoint covers; alone, and
	// with the last record damaged too.
	cs := crashedStore(t, "put", true)
	full := cs.fs.ReadFileBytes(cs.file)
	ends := store.RecordEnds(full)
	covered := bytes.Clone(full)
	covered[ends[2]-1] ^= 1
	fs := cs.fs.Clone()
	fs.WriteFileBytes(cs.file, covered)
	try(fs, cs.file, "a record the checkpoint covers")
	covered[len(covered)-1] ^= 1
	fs.WriteFileBytes(cs.file, covered)
	try(fs, cs.file, "a record the checkpoint covers, and the last record")

	// The last log file cut short of what the checkpoint covers.
	fs = cs.fs.Clone()
	fs.WriteFileBytes(cs.file, full[:ends[3]])
	try(fs, cs.file, "the last log file shorter than the checkpoint")

	// The manifest.
	fs = cs.fs.Clone()
	m := fs.ReadFileBytes("db/MANIFEST")
	m[len(m)-1] ^= 1
	fs.WriteFileBytes("db/MANIFEST", m)
	try(fs, "db/MANIFEST", "a damaged manifest")
}

// TestRepairLockedAndBadInput: a store open elsewhere is ErrLocked, and
// left as it was; a path that holds no store is ErrNotStore, and nothing
// is created.
func TestRepairLockedAndBadInput(t *testing.T) {
	t.Parallel()
	cs := crashedStore(t, "put", false)
	fs := cs.fs.Clone()
	b := fs.ReadFileBytes(cs.file)
	b[len(b)-1] ^= 1
	fs.WriteFileBytes(cs.file, b)
	// A handle on the store while it is damaged: the store as another
	// process holds it, its lock taken.
	held := fs.Clone()
	held.WriteFileBytes(cs.file, b[:cs.start])
	s, err := store.Open("db", store.WithFS(held))
	if err != nil {
		t.Fatal(err)
	}
	held.WriteFileBytes(cs.file, b)
	before := files(held)
	if _, err := store.Repair("db", store.WithRepairFS(held)); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Repair of a store open elsewhere: %v, want ErrLocked", err)
	}
	unchanged(t, held, before, "a store open elsewhere")
	s.Close()

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "file"), []byte("not a store"), 0o644)
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	os.Mkdir(filepath.Join(dir, "other"), 0o755)
	os.WriteFile(filepath.Join(dir, "other", "cat.jpg"), []byte("jpeg"), 0o644)
	for _, c := range []struct{ name, says string }{
		{"missing", "does not exist"},
		{"file", "is a file, not a directory"},
		{"empty", "is an empty directory"},
		{"other", "holds other files (cat.jpg)"},
	} {
		_, err := store.Repair(filepath.Join(dir, c.name))
		if !errors.Is(err, store.ErrNotStore) || !bytes.Contains([]byte(err.Error()), []byte(c.says)) {
			t.Fatalf("Repair of %s: %v; want ErrNotStore saying %q", c.name, err, c.says)
		}
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 3 {
		t.Fatalf("%d entries after the refusals, want the 3 made", len(es))
	}
	for _, d := range []string{"empty", "other"} {
		if es, _ := os.ReadDir(filepath.Join(dir, d)); len(es) != map[string]int{"empty": 0, "other": 1}[d] {
			t.Fatalf("%s holds %d files after Repair", d, len(es))
		}
	}
}

// TestRepairCrash: a crash after the copy is synced and before the log
// file is cut leaves the copy and the log file whole: Open still refuses
// the store, and Repair again repairs it, keeping that copy. A crash
// after the cut leaves the copy and a store that opens. A failed sync of
// the copy leaves the log file whole and no copy. A file that already
// holds other bytes under the copy's name is kept, and the copy takes
// the next name.
func TestRepairCrash(t *testing.T) {
	t.Parallel()
	cs := crashedStore(t, "put", true)
	b := cs.fs.ReadFileBytes(cs.file)
	b[len(b)-2] ^= 0x10
	damaged := cs.fs.Clone()
	damaged.WriteFileBytes(cs.file, b)
	copyName := fmt.Sprintf("%s.cut-%d", cs.file, cs.start)
	errStop := errors.New("stopped")
	for _, at := range []string{"copied", "cut"} {
		fs := damaged.Clone()
		var crashed *store.MemFS
		_, err := store.Repair("db", store.WithRepairFS(fs), store.WithRepairStep(func(step string) error {
			if step != at {
				return nil
			}
			crashed = fs.CrashLosingUnsynced()
			return errStop
		}))
		if !errors.Is(err, errStop) || crashed == nil {
			t.Fatalf("Repair stopped after %s: %v", at, err)
		}
		what := "a crash after the step " + at
		if got := crashed.ReadFileBytes(copyName); !bytes.Equal(got, b[cs.start:]) {
			t.Fatalf("%s: the copy holds %d bytes, want %d", what, len(got), len(b)-cs.start)
		}
		if at == "cut" {
			if got := crashed.ReadFileBytes(cs.file); !bytes.Equal(got, b[:cs.start]) {
				t.Fatalf("%s: the log file is %d bytes, want %d", what, len(got), cs.start)
			}
			expectState(t, crashed, cs.before, what)
			continue
		}
		if got := crashed.ReadFileBytes(cs.file); !bytes.Equal(got, b) {
			t.Fatalf("%s: the log file changed", what)
		}
		_, err = store.Open("db", store.WithFS(crashed))
		refused(t, err, cs.file, cs.start, what)
		rep, err := store.Repair("db", store.WithRepairFS(crashed))
		repaired(t, crashed, rep, err, cs.file, b, cs.start, 1, cs.before, true, what+", then Repair again")
		if _, ok := fileIn(crashed, copyName+".2"); ok {
			t.Fatalf("%s: Repair again made a second copy", what)
		}
	}

	// A crash in the middle of writing the copy: the next Repair writes
	// it anew, under its name. The previous version wrote the copy
	// under its name, and the next one, finding other bytes there,
	// wrote another, leaving the partial one.
	for _, partial := range []int{0, (len(b) - cs.start) / 2} {
		fs := damaged.Clone()
		what := fmt.Sprintf("a crash writing the copy, %d bytes of it written", partial)
		if partial > 0 {
			fs.WriteFileBytes(copyName+".tmp", b[cs.start:cs.start+partial])
		} else {
			fs.CrashAtWrite(1) // the copy's first write: Repair writes nothing before
			func() {
				defer func() {
					if r := recover(); r != store.ErrCrash {
						t.Fatalf("%s: Repair did not crash: %v", what, r)
					}
				}()
				store.Repair("db", store.WithRepairFS(fs))
			}()
			fs = fs.ProcessCrash()
		}
		if got := fs.ReadFileBytes(cs.file); !bytes.Equal(got, b) {
			t.Fatalf("%s: the log file changed", what)
		}
		rep, err := store.Repair("db", store.WithRepairFS(fs))
		repaired(t, fs, rep, err, cs.file, b, cs.start, 1, cs.before, true, what+", then Repair again")
		if rep.Copy != copyName {
			t.Fatalf("%s: Repair again copied to %s, want %s", what, rep.Copy, copyName)
		}
		for _, n := range []string{copyName + ".2", copyName + ".tmp"} {
			if _, ok := fileIn(fs, n); ok {
				t.Fatalf("%s: Repair again left %s", what, n)
			}
		}
	}

	fs := damaged.Clone()
	fs.FailSyncs(errors.New("sync failed"))
	if _, err := store.Repair("db", store.WithRepairFS(fs)); err == nil {
		t.Fatal("Repair with failing syncs succeeded")
	}
	if got := fs.ReadFileBytes(cs.file); !bytes.Equal(got, b) {
		t.Fatal("a failed sync of the copy, and the log file was cut")
	}
	for _, n := range []string{copyName, copyName + ".tmp"} {
		if _, ok := fileIn(fs, n); ok {
			t.Fatalf("a failed sync of the copy left %s", n)
		}
	}

	fs = damaged.Clone()
	fs.WriteFileBytes(copyName, []byte("someone's file"))
	rep, err := store.Repair("db", store.WithRepairFS(fs))
	if err != nil || rep.Copy != copyName+".2" {
		t.Fatalf("Repair with the copy's name taken: %+v, %v; want the copy in %s.2", rep, err, copyName)
	}
	if got := fs.ReadFileBytes(copyName); string(got) != "someone's file" {
		t.Fatalf("the file under the copy's name became %q", got)
	}
	if got := fs.ReadFileBytes(rep.Copy); !bytes.Equal(got, b[cs.start:]) {
		t.Fatalf("the copy holds %d bytes, want %d", len(got), len(b)-cs.start)
	}
}

// TestRepairOldAndLongStores: Repair leaves a store of the first format
// version as it is (Open would rewrite its manifest), and repairs a
// flipped last record in the last of several log files, and in the last
// log file after a compaction, which is not the highest number.
func TestRepairOldAndLongStores(t *testing.T) {
	t.Parallel()
	v1 := store.NewMemFS()
	golden := filepath.Join("testdata", "golden", "v1")
	names, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(golden, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		v1.WriteFileBytes("db/"+n.Name(), b)
	}
	v1.WriteFileBytes("db/LOCK", nil)
	before := files(v1)
	rep, err := store.Repair("db", store.WithRepairFS(v1))
	if err != nil || rep.Damage != nil || rep.Cut {
		t.Fatalf("Repair of the first version's golden store: %+v, %v", rep, err)
	}
	unchanged(t, v1, before, "the first version's golden store")

	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithLogFileSize(4<<10), store.WithSeed(3), store.WithSync(store.SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 200 {
		k, v := fmt.Sprintf("key %d", i), fmt.Sprintf("value %d", i)
		if err := s.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	crashed := fs.ProcessCrash()
	s.Close()
	crashed.Remove("db/INDEX")
	var last string
	for _, n := range crashed.Names() {
		if filepath.Ext(n) == ".log" {
			last = n
		}
	}
	if last == "db/0000000000000000.log" {
		t.Fatal("one log file")
	}
	b := crashed.ReadFileBytes(last)
	ends := store.RecordEnds(b)
	start := int(ends[len(ends)-2])
	b[len(b)-1] ^= 2
	crashed.WriteFileBytes(last, b)
	delete(want, "key 199")
	rep, err = store.Repair("db", store.WithRepairFS(crashed))
	repaired(t, crashed, rep, err, last, b, start, 1, want, true, "the last of several log files")

	// After a compaction the log file that takes the writes, which the
	// manifest lists last, has a lower number than the compaction's
	// output: Repair cuts it, not the highest.
	want["after the repair"] = "a write"
	s, err = store.Open("db", store.WithFS(crashed), store.WithLogFileSize(4<<10), store.WithSync(store.SyncAlways), store.WithAutoCompact(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"after compacting", "and again"} {
		if err := s.Put([]byte(k), []byte("v")); err != nil {
			t.Fatal(err)
		}
		want[k] = "v"
	}
	compacted := crashed.ProcessCrash()
	s.Close()
	compacted.Remove("db/INDEX")
	var logs []string
	for _, n := range compacted.Names() {
		if filepath.Ext(n) == ".log" {
			logs = append(logs, n)
		}
	}
	active := ""
	for _, n := range logs {
		if len(store.RecordEnds(compacted.ReadFileBytes(n))) == 2 {
			active = n
		}
	}
	if active == "" || active == logs[len(logs)-1] {
		t.Fatalf("log files %v: the active one (of 2 records) is %q, want one but the highest", logs, active)
	}
	b = compacted.ReadFileBytes(active)
	start = int(store.RecordEnds(b)[0])
	b[len(b)-1] ^= 2
	compacted.WriteFileBytes(active, b)
	delete(want, "and again")
	rep, err = store.Repair("db", store.WithRepairFS(compacted))
	repaired(t, compacted, rep, err, active, b, start, 1, want, true, "the last log file after a compaction")
}

// dirState is what a directory of a store holds: each name's size,
// mode, modification time and bytes, and the directory's own.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	m["."] = fmt.Sprint(fi.Mode(), fi.ModTime().UnixNano())
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = fmt.Sprint(fi.Size(), fi.Mode(), fi.ModTime().UnixNano(), string(b))
	}
	return m
}

// stateUnchanged fails unless dir is in the state before.
func stateUnchanged(t *testing.T, dir string, before map[string]string, what string) {
	t.Helper()
	after := dirState(t, dir)
	for n, b := range before {
		if a, ok := after[n]; !ok || a != b {
			t.Errorf("%s: the dry run changed %s (present %v)", what, n, ok)
		}
	}
	for n := range after {
		if _, ok := before[n]; !ok {
			t.Errorf("%s: the dry run created %s", what, n)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// makeReadOnly takes the write permissions of dir and its files away,
// and gives them back when the test ends. A process run as root writes
// all the same: then what it changed shows in dirState.
func makeReadOnly(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		p := filepath.Join(dir, e.Name())
		if err := os.Chmod(p, 0o444); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(p, 0o644) })
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
}

// TestRepairDryRunReadOnly: a dry run of Repair on a store made
// read-only (its files and directory) reports what it reports on the
// store writable, and neither run changes a name, a size, a mode, a
// time or a byte in the directory: with the lock file and without it
// (a store copied without it), sound and with a damaged last record. The
// previous version opened the files for writing, and created the lock
// file.
func TestRepairDryRunReadOnly(t *testing.T) {
	t.Parallel()
	for _, damaged := range []bool{false, true} {
		for _, lockFile := range []bool{true, false} {
			what := fmt.Sprintf("damaged %v, lock file %v", damaged, lockFile)
			dir := filepath.Join(t.TempDir(), "db")
			s, err := store.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"a", "b"} {
				if err := s.Put([]byte(k), []byte("value of "+k)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if damaged {
				// The last record's last byte, one bit flipped, and no
				// checkpoint covering it (as after a crash).
				os.Remove(filepath.Join(dir, "INDEX"))
				log := filepath.Join(dir, "0000000000000000.log")
				b, err := os.ReadFile(log)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)-1] ^= 1
				if err := os.WriteFile(log, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if !lockFile {
				if err := os.Remove(filepath.Join(dir, "LOCK")); err != nil {
					t.Fatal(err)
				}
			}
			report := func(how string) string {
				before := dirState(t, dir)
				rep, err := store.Repair(dir, store.WithDryRun())
				if damaged != (rep.Damage != nil) || rep.Cut || err != nil {
					t.Fatalf("%s, %s: Repair: %+v, %v", what, how, rep, err)
				}
				stateUnchanged(t, dir, before, fmt.Sprintf("%s, %s", what, how))
				return fmt.Sprintf("%+v", rep)
			}
			writable := report("writable")
			makeReadOnly(t, dir)
			if readOnly := report("read-only"); readOnly != writable {
				t.Fatalf("%s: the dry run reports %s on the store read-only, %s on it writable", what, readOnly, writable)
			}
		}
	}
}

// TestRepairDryRunLocked: a dry run of Repair refuses a store another
// Store has open (ErrLocked), its lock file read-only too, and changes
// nothing. It waits for the lock as Open does: a second.
func TestRepairDryRunLocked(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "db")
	// SyncAlways: the store writes nothing more after the Put.
	s, err := store.Open(dir, store.WithSync(store.SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	makeReadOnly(t, dir)
	before := dirState(t, dir)
	if _, err := store.Repair(dir, store.WithDryRun()); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("dry run of a store open elsewhere: %v, want ErrLocked", err)
	}
	stateUnchanged(t, dir, before, "a store open elsewhere")
}

// TestLostManifestIsNotRepairable: a directory whose log files hold
// records but which has no MANIFEST (lost) is a store's, damaged in a way
// no cut repairs: Open (creating or not) and Repair (and its dry run)
// return the same *RepairError, naming the manifest, and change no file.
// The previous version had Open report damage (ErrCorrupt, which the
// command line sends to repair) and Repair say it is not a store.
func TestLostManifestIsNotRepairable(t *testing.T) {
	t.Parallel()
	fs := store.NewMemFS()
	s, err := store.Open("db", store.WithFS(fs), store.WithLogFileSize(4<<10))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if err := s.Put(fmt.Appendf(nil, "key %d", i), bytes.Repeat([]byte("v"), 60)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(logFiles(fs)) < 2 {
		t.Fatalf("log files %v; want several", logFiles(fs))
	}
	fs.Remove("db/MANIFEST")
	before := files(fs)
	var msgs []string
	check := func(err error, what string) {
		t.Helper()
		var re *store.RepairError
		if !errors.As(err, &re) || !errors.Is(err, store.ErrCorrupt) || !errors.Is(err, store.ErrNotRepairable) ||
			errors.Is(err, store.ErrNotStore) || re.Damage.File != filepath.Join("db", "MANIFEST") ||
			!strings.Contains(re.Damage.Detail, "0000000000000000.log holds records") {
			t.Fatalf("%s of a store whose manifest is lost: %v; want a *RepairError naming db/MANIFEST", what, err)
		}
		unchanged(t, fs, before, what)
		msgs = append(msgs, err.Error())
	}
	_, err = store.Open("db", store.WithFS(fs))
	check(err, "Open")
	_, err = store.Open("db", store.WithFS(fs), store.WithMustExist())
	check(err, "Open (WithMustExist)")
	_, err = store.Repair("db", store.WithRepairFS(fs))
	check(err, "Repair")
	_, err = store.Repair("db", store.WithRepairFS(fs), store.WithDryRun())
	check(err, "Repair (WithDryRun)")
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Fatalf("the errors differ: %q and %q", msgs[0], m)
		}
	}
	t.Logf("the error: %s", msgs[0])
}
