package exactdedup_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/exactdedup"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
	"github.com/dedupkit/cuckoo/internal/urlgen"
	"github.com/dedupkit/cuckoo/store"
)

// awkProgram is awk '!seen[$0]++' with the CR rule: a line's trailing CR
// is not part of its key.
const awkProgram = `{ k = $0; sub(/\r$/, "", k) } !seen[k]++`

func awk(t *testing.T, input []byte) []byte {
	t.Helper()
	path, err := exec.LookPath("awk")
	if err != nil {
		t.Skip("awk not installed (apt-get install -y mawk)")
	}
	cmd := exec.Command(path, awkProgram)
	cmd.Stdin = bytes.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func run(t *testing.T, input []byte, cfg exactdedup.Config) ([]byte, exactdedup.Stats) {
	t.Helper()
	var out bytes.Buffer
	d, err := exactdedup.New(&out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(bytes.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), st
}

// goLines is every line of the .go files under $(go env GOROOT)/src,
// twice, the second time with CRLF ends: of the whole tree (90 MB) with
// CUCKOO_LONG=1, of net/http with -short, and else of its first 8 MB in
// the walk's order.
func goLines(t *testing.T) []byte {
	root := filepath.Join(runtime.GOROOT(), "src")
	limit := 8 << 20
	switch {
	case testing.Short():
		root = filepath.Join(root, "net", "http")
	case testlong.Enabled():
		limit = math.MaxInt
	}
	var b bytes.Buffer
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if b.Len() >= limit {
			return fs.SkipAll
		}
		if err == nil && strings.HasSuffix(p, ".go") {
			data, _ := os.ReadFile(p)
			if !bytes.Contains(data, []byte{0}) && !bytes.Contains(data, []byte{'\r'}) {
				b.Write(data)
			}
		}
		return nil
	})
	if b.Len() == 0 {
		t.Skip("no Go source tree")
	}
	crlf := bytes.ReplaceAll(b.Bytes(), []byte("\n"), []byte("\r\n"))
	return append(b.Bytes(), crlf...)
}

// nearMisses is lines that differ from each other by one byte, a blank,
// a case or a trailing CR.
func nearMisses() []byte {
	var b bytes.Buffer
	for i := range 3000 {
		for _, l := range []string{
			fmt.Sprintf("line %d", i), fmt.Sprintf("line %d ", i), fmt.Sprintf("Line %d", i),
			fmt.Sprintf("line %d\r", i), fmt.Sprintf("line  %d", i), fmt.Sprintf("%d", i), fmt.Sprintf("%d\t", i),
			"", " ", "\r",
		} {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("no newline at the end")
	return b.Bytes()
}

// TestMatchesAwk: the output is awk's (with the CR rule), with a scratch
// log and with a kept store.
func TestMatchesAwk(t *testing.T) {
	g := urlgen.New(testseed.Seed(t), 0.3)
	var urls bytes.Buffer
	var line []byte
	for range 200_000 {
		line, _ = g.Append(line[:0])
		urls.Write(line)
	}
	for name, input := range map[string][]byte{
		"go-source":   goLines(t),
		"near-misses": nearMisses(),
		"urls":        urls.Bytes(),
		"empty":       nil,
	} {
		want := awk(t, input)
		for _, kept := range []bool{false, true} {
			if kept && testing.Short() && len(input) > 1<<20 {
				continue // the store's path, one line at a time, on the small inputs only
			}
			t.Run(fmt.Sprintf("input=%s/kept=%v", name, kept), func(t *testing.T) {
				cfg := exactdedup.Config{TempDir: t.TempDir()}
				if kept {
					cfg.Dir = filepath.Join(t.TempDir(), "seen")
				}
				got, st := run(t, input, cfg)
				if !bytes.Equal(got, want) {
					t.Fatalf("output differs from awk's: %d bytes, awk %d", len(got), len(want))
				}
				t.Logf("%d lines in, %d out; index %d bytes", st.LinesIn, st.LinesOut, st.IndexBytes)
			})
		}
	}
}

// TestLongLines: lines longer than the store's keys (and than a block of
// input) are deduped exactly, with a scratch log and with a kept store.
func TestLongLines(t *testing.T) {
	long := strings.Repeat("x", 2<<20)
	input := []byte(long + "\n" + long + "y\n" + long + "\n" + "short\n" + long + "y\n")
	for _, dir := range []string{"", filepath.Join(t.TempDir(), "seen")} {
		got, _ := run(t, input, exactdedup.Config{TempDir: t.TempDir(), Dir: dir})
		if want := long + "\n" + long + "y\n" + "short\n"; string(got) != want {
			t.Fatalf("kept in %q: got %d bytes, want %d", dir, len(got), len(want))
		}
	}
}

// TestKeptDir: with a kept store, a second run sees the first one's lines.
func TestKeptDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "seen")
	run(t, []byte("a\nb\n"), exactdedup.Config{Dir: dir})
	got, _ := run(t, []byte("b\nc\na\nd\n"), exactdedup.Config{Dir: dir})
	if string(got) != "c\nd\n" {
		t.Fatalf("second run printed %q", got)
	}
	dups, _ := run(t, []byte("a\ne\n"), exactdedup.Config{Dir: dir, Duplicates: true})
	if string(dups) != "a\n" {
		t.Fatalf("--duplicates printed %q", dups)
	}
}

// TestSeenSetMark: a kept store is marked as a seen-set, and its keys are
// the lines' StoreKeys; one an earlier version kept (lines behind byte 1,
// no mark) is marked and read; a store of other keys is refused and left
// as it was.
func TestSeenSetMark(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "seen")
	run(t, []byte("a\n"), exactdedup.Config{Dir: dir})
	s, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k, ok := exactdedup.StoreKey([]byte("a"))
	if marked, err := exactdedup.IsSeenSet(s); !marked || err != nil || !ok {
		t.Fatalf("a kept store: seen-set %v, %v", marked, err)
	}
	if has, err := s.Has(k); !has || err != nil {
		t.Fatalf("the line's key: %v %v", has, err)
	}
	s.Close()

	old := filepath.Join(base, "old")
	s, _ = store.Open(old)
	s.Put(k, nil)
	s.Close()
	if got, _ := run(t, []byte("a\nb\n"), exactdedup.Config{Dir: old}); string(got) != "b\n" {
		t.Fatalf("an unmarked seen-set: printed %q", got)
	}

	other := filepath.Join(base, "other")
	s, _ = store.Open(other)
	s.Put([]byte("k"), []byte("v"))
	s.Close()
	if _, err := exactdedup.New(io.Discard, exactdedup.Config{Dir: other}); !errors.Is(err, exactdedup.ErrNotSeenSet) {
		t.Fatalf("a store of other keys: %v", err)
	}
	s, _ = store.Open(other)
	defer s.Close()
	if marked, _ := exactdedup.IsSeenSet(s); marked || s.Len() != 1 {
		t.Fatalf("the refused store changed: marked %v, %d keys", marked, s.Len())
	}
}

// model is dedup by a Go map of the lines' keys (the CR rule's), with
// every line written ending in "\n".
func model(input []byte, dups bool) []byte {
	seen := map[string]bool{}
	var out bytes.Buffer
	for line := range bytes.Lines(input) {
		k := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if seen[string(k)] == dups {
			out.Write(bytes.TrimSuffix(line, []byte("\n")))
			out.WriteByte('\n')
		}
		seen[string(k)] = true
	}
	return out.Bytes()
}

// TestScratchMatchesModel: a run that keeps nothing prints what a Go map
// of the keys says, on one core or several, for the first occurrences
// and the repeats, on lines with binary bytes, CRs, near misses, lines
// longer than a block and than the log's buffer, and repeats near and
// far (in the same block of input and in earlier ones, in the log's
// buffer and in its file).
func TestScratchMatchesModel(t *testing.T) {
	r := testseed.New(testseed.Seed(t))
	var in bytes.Buffer
	lines := 100_000
	if testing.Short() {
		lines = 30_000
	}
	for i := range lines {
		switch {
		case i%20_000 == 1:
			in.WriteString(strings.Repeat("L", 1<<20+r.IntN(2))) // past the log's buffer
		case i%2000 == 2:
			in.WriteString(strings.Repeat(fmt.Sprint(r.IntN(3)), 200_000+r.IntN(2))) // past a block
		case r.IntN(40) == 0:
			p := make([]byte, r.IntN(30))
			for j := range p {
				p[j] = byte(r.IntN(256))
			}
			in.Write(bytes.ReplaceAll(p, []byte("\n"), []byte("\r")))
		case r.IntN(40) == 0:
			fmt.Fprintf(&in, "line %d\r", r.IntN(1000))
		default:
			fmt.Fprintf(&in, "line %d", r.IntN(20_000))
		}
		in.WriteString("\n")
	}
	in.WriteString("line 17") // no "\n"
	for _, seq := range []bool{false, true} {
		for _, dups := range []bool{false, true} {
			got, st := run(t, in.Bytes(), exactdedup.Config{TempDir: t.TempDir(), Sequential: seq, Duplicates: dups})
			if want := model(in.Bytes(), dups); !bytes.Equal(got, want) {
				t.Fatalf("sequential %v, duplicates %v: output differs from the model: %d bytes, want %d", seq, dups, len(got), len(want))
			}
			if st.LinesIn != uint64(lines)+1 || st.BytesIn != uint64(in.Len()) {
				t.Fatalf("stats %+v", st)
			}
		}
	}
}

// TestScratchLeavesNoFile: on Linux and macOS the scratch log is unlinked
// as soon as it is made, so that nothing is left behind even by a run
// that is killed; Close leaves nothing anywhere.
func TestScratchLeavesNoFile(t *testing.T) {
	tmp := t.TempDir()
	d, err := exactdedup.New(io.Discard, exactdedup.Config{TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(strings.NewReader("a\nb\na\n")); err != nil {
		t.Fatal(err)
	}
	names, _ := os.ReadDir(tmp)
	if (runtime.GOOS == "linux" || runtime.GOOS == "darwin") && len(names) != 0 {
		t.Fatalf("during the run, %s holds %v", tmp, names)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if names, _ = os.ReadDir(tmp); len(names) != 0 {
		t.Fatalf("after Close, %s holds %v", tmp, names)
	}
}

// chunkReader hands out data chunk bytes at a time, calling before ahead
// of every Read but the first: the moments between which a run is killed.
type chunkReader struct {
	data   []byte
	chunk  int
	reads  int
	before func()
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.reads++; r.reads > 1 {
		r.before()
	}
	n := copy(p, r.data[:min(len(r.data), r.chunk)])
	r.data = r.data[n:]
	return n, nil
}

// TestKeptDirHoldsOnlyPrintedLines: whenever a run with a kept store is
// killed (SIGKILL: the files as the operating system has them, here
// copied between two reads of the input), every line the store's files
// record has been printed, so that a later run never drops a line no run
// printed. Short lines, whose records the store buffers, and lines long
// enough that it writes their records at once. The copies are opened as
// a store after a crash.
func TestKeptDirHoldsOnlyPrintedLines(t *testing.T) {
	var input bytes.Buffer
	for i := range 100_000 {
		fmt.Fprintf(&input, "%d\n", i%80_000)
		switch i {
		case 20_007, 70_007: // a key of 600 KB, written at once
			input.WriteString(strings.Repeat(fmt.Sprint(i), 100_000) + "\n")
		case 50_007: // past the longest key: stored under its hash
			input.WriteString(strings.Repeat(fmt.Sprint(i), 200_000) + "\n")
		}
	}
	dir := filepath.Join(t.TempDir(), "seen")
	var out bytes.Buffer
	d, err := exactdedup.New(&out, exactdedup.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	checks, parsed, logBytes := 0, 0, int64(0)
	printed := map[string]bool{}
	check := func() {
		for {
			i := bytes.IndexByte(out.Bytes()[parsed:], '\n')
			if i < 0 {
				break
			}
			printed[string(out.Bytes()[parsed:parsed+i])] = true
			parsed += i + 1
		}
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var size int64 // of the files: a check where the store wrote
		for _, f := range files {
			if fi, err := f.Info(); err == nil {
				size += fi.Size()
			}
		}
		if size == logBytes {
			return
		}
		logBytes = size
		checks++
		crashed := t.TempDir()
		if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		s, err := store.Open(crashed)
		if err != nil {
			t.Fatalf("after %d bytes of output: the store as a kill leaves it: %v", out.Len(), err)
		}
		defer s.Close()
		err = s.Range(func(k, v []byte) bool {
			line := ""
			switch k[0] {
			case 1:
				line = string(k[1:])
			case 2:
				line = string(v)
			default:
				return true // the seen-set's mark
			}
			if !printed[line] {
				t.Fatalf("after %d bytes of output: the store records a line of %d bytes that was not printed", out.Len(), len(line))
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Run(&chunkReader{data: input.Bytes(), chunk: 16 << 10, before: check}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	check()
	t.Logf("%d moments checked", checks)
}

// failAfter is an output that takes n bytes, then fails.
type failAfter struct {
	n   int
	got bytes.Buffer
}

func (w *failAfter) Write(p []byte) (int, error) {
	k := min(len(p), w.n-w.got.Len())
	w.got.Write(p[:k])
	if k < len(p) {
		return k, errors.New("no space left on device")
	}
	return k, nil
}

// TestKeptDirOutputFailureRecordsNoUnprintedLine: when the output fails,
// the store records none of the lines not written, so that a later run
// with a working output prints every line the first did not: together
// the two print every distinct line.
func TestKeptDirOutputFailureRecordsNoUnprintedLine(t *testing.T) {
	var input bytes.Buffer
	for i := range 200_000 {
		fmt.Fprintf(&input, "%d\n", i%150_000)
	}
	dir := filepath.Join(t.TempDir(), "seen")
	out := &failAfter{n: 700_000}
	d, err := exactdedup.New(out, exactdedup.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(bytes.NewReader(input.Bytes()))
	if err == nil {
		err = d.Flush()
	}
	if !errors.Is(err, exactdedup.ErrOutput) {
		t.Fatalf("Run with a failing output: %v, want ErrOutput", err)
	}
	d.Close()
	again, _ := run(t, input.Bytes(), exactdedup.Config{Dir: dir})
	printed := map[string]bool{}
	for _, b := range [][]byte{out.got.Bytes(), again} {
		for _, l := range bytes.Split(b, []byte("\n")) {
			printed[string(l)] = true
		}
	}
	for i := range 150_000 {
		if !printed[fmt.Sprint(i)] {
			t.Fatalf("line %d printed by neither run (the first printed %d bytes)", i, out.got.Len())
		}
	}
}
