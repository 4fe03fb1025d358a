package dedup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/internal/testlong"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// goSource is the .go files under $(go env GOROOT)/src joined in sorted
// path order: the whole tree (about 90 MB) with CUCKOO_LONG=1, net/http
// (about 3 MB) otherwise. Nil when there is no tree.
var goSource = sync.OnceValue(func() []byte {
	root := filepath.Join(runtime.GOROOT(), "src")
	if !testlong.Enabled() {
		root = filepath.Join(root, "net", "http")
	}
	var paths []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			paths = append(paths, p)
		}
		return nil
	})
	slices.Sort(paths)
	var b bytes.Buffer
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		b.Write(data)
	}
	return b.Bytes()
})

// craftedInput is lines that test the edges of the line rule and of the
// blocks: empty lines, CRs (before "\n", alone, at the end), binary
// bytes, near misses, lines around a block's size, a last line without
// "\n".
func craftedInput(r *rand.Rand, block int) []byte {
	var b bytes.Buffer
	for i := range 3000 {
		switch r.IntN(12) {
		case 0:
			b.WriteString("\n")
		case 1:
			b.WriteString("\r\n")
		case 2:
			fmt.Fprintf(&b, "line %d\r\n", i%50)
		case 3:
			fmt.Fprintf(&b, "line %d\r\r\n", i%50)
		case 4:
			fmt.Fprintf(&b, "line %d \n", i%50)
		case 5: // binary bytes, '\r' and NUL among them
			p := make([]byte, r.IntN(40))
			for j := range p {
				if p[j] = byte(r.IntN(256)); p[j] == '\n' {
					p[j] = 0
				}
			}
			b.Write(p)
			b.WriteString("\n")
		case 6: // around the block's size, some repeated
			n := block + r.IntN(5) - 2
			if r.IntN(3) == 0 {
				n = 3*block + 1
			}
			b.WriteString(strings.Repeat(string(rune('a'+r.IntN(3))), max(n-1, 0)))
			b.WriteString("\n")
		default:
			fmt.Fprintf(&b, "line %d\n", r.IntN(500))
		}
	}
	b.WriteString("line 7\r") // the last line: no "\n", a lone CR
	return b.Bytes()
}

// seqInput is the numbers 1 to n, one a line: every line distinct.
func seqInput(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.Bytes()
}

// oneAtATime is the reference: the filter told about one key at a time,
// AddUnique in input order, as a loop over lines would.
func oneAtATime(t *testing.T, seen *filterfile.Filter, input []byte, keyer *KeyExtractor, dups bool) []byte {
	t.Helper()
	var out bytes.Buffer
	for line := range bytes.Lines(input) {
		key := Content(line)
		if keyer != nil {
			key = keyer.Key(key)
		}
		added, err := seen.AddUnique(key)
		if err != nil {
			t.Fatal(err)
		}
		if added != dups {
			out.Write(line)
			if line[len(line)-1] != '\n' {
				out.WriteByte('\n')
			}
		}
	}
	return out.Bytes()
}

// chunkReader returns its data in reads of random sizes up to max, as a
// pipe does.
type chunkReader struct {
	data []byte
	r    *rand.Rand
	max  int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 1+c.r.IntN(c.max))], c.data)
	c.data = c.data[n:]
	return n, nil
}

// TestPipelineMatchesOneAtATime: on every core or on one, with blocks of
// any size and reads of any size, a Deduper writes what the filter told
// one key at a time in input order says, byte for byte, on Go's source
// tree, on seq, and on crafted lines; for a fixed-size filter and a
// growing one (which take hashes), a Bloom filter (which takes keys),
// keyed on fields, and for the repeats (--duplicates).
func TestPipelineMatchesOneAtATime(t *testing.T) {
	r, seed := testRand(t)
	inputs := map[string][]byte{"seq": seqInput(100_000), "crafted-4k": craftedInput(r, 4096), "crafted-100": craftedInput(r, 100)}
	if src := goSource(); len(src) > 0 && !testing.Short() {
		inputs["go-source"] = src
	}
	if testing.Short() {
		inputs["seq"] = seqInput(20_000)
	}
	spec2, _ := ParseFieldSpec("2")
	kinds := []filterfile.Kind{filterfile.Cuckoo, filterfile.CuckooScalable, filterfile.BloomBlocked}
	for name, input := range inputs {
		lines := uint64(bytes.Count(input, []byte{'\n'}) + 1)
		for i, kind := range kinds {
			spec := filterfile.Spec{Kind: kind, Capacity: lines, FPR: 1e-3, Seed: seed + uint64(i), SeedSet: true}
			if kind == filterfile.CuckooScalable {
				spec.Capacity = max(lines/64, 1) // it grows 64-fold
			}
			for _, c := range []struct {
				name  string
				cfg   Config
				keyer bool
				read  func([]byte) io.Reader
			}{
				{"sequential", Config{Sequential: true}, false, nil},
				{"concurrent", Config{}, false, nil},
				{"workers=3/block=4096/pipe", Config{Workers: 3, BufferSize: 4096}, false, nil},
				{"block=100/duplicates", Config{BufferSize: 100, Duplicates: true}, false, nil},
				{"key=2", Config{Key: NewKeyExtractor(spec2, "", false)}, true, nil},
			} {
				read := func(b []byte) io.Reader { return bytes.NewReader(b) }
				if strings.HasSuffix(c.name, "pipe") {
					read = func(b []byte) io.Reader { return &chunkReader{data: b, r: testseed.New(seed), max: 70_000} }
				}
				t.Run(fmt.Sprintf("input=%s/kind=%s/%s", name, kind, c.name), func(t *testing.T) {
					ref, _ := filterfile.New(spec)
					var keyer *KeyExtractor
					if c.keyer {
						keyer = NewKeyExtractor(spec2, "", false)
					}
					want := oneAtATime(t, ref, input, keyer, c.cfg.Duplicates)
					seen, _ := filterfile.New(spec)
					var out bytes.Buffer
					d := New(seen, &out, c.cfg)
					if err := d.Run(read(input)); err != nil {
						t.Fatal(err)
					}
					d.Flush()
					if !bytes.Equal(out.Bytes(), want) {
						t.Fatalf("output differs from one key at a time: %d bytes, want %d (%s)",
							out.Len(), len(want), firstDifference(out.Bytes(), want))
					}
					st := d.Stats()
					if st.LinesIn != lines-boolToUint(input[len(input)-1] == '\n') || st.BytesIn != uint64(len(input)) ||
						st.LinesOut != uint64(bytes.Count(want, []byte{'\n'})) || st.Added != ref.Len() {
						t.Fatalf("stats %+v; %d lines, %d bytes, %d out, %d added", st, lines, len(input), bytes.Count(want, []byte{'\n'}), ref.Len())
					}
				})
			}
		}
	}
}

func boolToUint(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// firstDifference says where two outputs part.
func firstDifference(got, want []byte) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			lo := max(i-40, 0)
			return fmt.Sprintf("at byte %d: got %q, want %q", i, got[lo:min(i+40, len(got))], want[lo:min(i+40, len(want))])
		}
	}
	return "one is a prefix of the other"
}

// TestBlockReaderCutsLines: the blocks of any input, read in reads of any
// size, hold its lines in order, whole, each in one block (a long one in
// pieces of its own), at most blockLines of them, and a block is handed
// on without waiting for more once a short read ended a line.
func TestBlockReaderCutsLines(t *testing.T) {
	r, _ := testRand(t)
	for _, size := range []int{1, 2, 7, 64, 100, 4096} {
		for _, input := range [][]byte{nil, []byte("\n"), []byte("x"), craftedInput(r, size), seqInput(3000)} {
			for _, reads := range []int{1, 3, 1000, 1 << 20} {
				checkBlocks(t, input, size, &chunkReader{data: input, r: r, max: reads})
			}
			checkBlocks(t, input, size, iotest.HalfReader(bytes.NewReader(input)))
			checkBlocks(t, input, size, iotest.DataErrReader(bytes.NewReader(input)))
		}
	}
}

// checkBlocks cuts input into blocks of size bytes from rd and checks
// that they hold its lines.
func checkBlocks(t *testing.T, input []byte, size int, rd io.Reader) {
	t.Helper()
	br := &blockReader{r: rd}
	needs := Needs{Keys: true, Hash: true, Links: true}
	p := newPreparer(needs, nil, size)
	pair := [2]*Block{newBlock(size, needs), newBlock(size, needs)}
	var got [][]byte
	for i := 0; ; i ^= 1 {
		b := pair[i]
		br.start(b)
		if !br.fill(b) {
			break
		}
		p.prepare(b)
		if b.n > blockLines(size) || b.n == 0 {
			t.Fatalf("size %d: a block of %d lines", size, b.n)
		}
		if b.long != nil {
			got = append(got, bytes.Join(b.long, nil))
			continue
		}
		start := 0
		for j := range b.n {
			end := int(b.ends[j])
			got = append(got, bytes.Clone(b.data[start:end]))
			if !bytes.Equal(b.Keys()[j], Content(b.data[start:end])) {
				t.Fatalf("size %d: key %q of line %q", size, b.Keys()[j], b.data[start:end])
			}
			start = end
		}
	}
	if br.Err() != nil {
		t.Fatalf("size %d: %v", size, br.Err())
	}
	want := slices.Collect(bytes.Lines(input))
	if len(got) != len(want) {
		t.Fatalf("size %d: %d lines, want %d", size, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("size %d: line %d is %q, want %q", size, i, got[i], want[i])
		}
	}
}

// TestNthLineEnd: the offset past the n-th line end, for lines of any
// length around the stretches nthLineEnd counts at once, and -1 when
// there are fewer.
func TestNthLineEnd(t *testing.T) {
	r, _ := testRand(t)
	for _, input := range [][]byte{nil, []byte("\n"), []byte("x"), seqInput(5000), craftedInput(r, 20000),
		bytes.Repeat([]byte("\n"), 9000), append(bytes.Repeat([]byte("y"), 4095), '\n', '\n')} {
		var ends []int
		for i, c := range input {
			if c == '\n' {
				ends = append(ends, i+1)
			}
		}
		for n := 1; n <= len(ends)+2; n++ {
			want := -1
			if n <= len(ends) {
				want = ends[n-1]
			}
			if got := nthLineEnd(input, n); got != want {
				t.Fatalf("input of %d bytes, line %d: %d, want %d", len(input), n, got, want)
			}
		}
	}
}

// FuzzBlockReader: whatever the input, the block size and the read sizes,
// the blocks hold the input's lines, and their links join exactly the
// equal keys.
func FuzzBlockReader(f *testing.F) {
	f.Add([]byte("a\nb\na\r\n\n\nlong line\n"), uint8(4), uint64(1))
	f.Add([]byte("\r"), uint8(1), uint64(2))
	f.Add([]byte("x\ny\nx"), uint8(2), uint64(3))
	f.Fuzz(func(t *testing.T, input []byte, size uint8, seed uint64) {
		r := testseed.New(seed)
		checkBlocks(t, input, int(size)+1, &chunkReader{data: input, r: r, max: 1 + int(size)*3})
		var out bytes.Buffer
		d := New(linkCheck{t: t, seen: map[string]bool{}}, &out, Config{BufferSize: int(size) + 1, Workers: 2})
		if err := d.Run(&chunkReader{data: input, r: r, max: 7}); err != nil {
			t.Fatal(err)
		}
		d.Flush()
		var lines []string
		for l := range bytes.Lines(input) {
			lines = append(lines, string(l))
		}
		if want := modelDedup(lines, false); out.String() != want {
			t.Fatalf("output %q, want %q", out.String(), want)
		}
	})
}

// linkCheck is an exact BlockSet that checks a block's links against its
// keys.
type linkCheck struct {
	t    *testing.T
	seen map[string]bool
}

func (linkCheck) Needs() Needs               { return Needs{Links: true} }
func (linkCheck) FalsePositiveRate() float64 { return 0 }
func (linkCheck) RateIsCheap() bool          { return true }
func (s linkCheck) AddUniqueBatch(keys [][]byte, added []bool) (int, error) {
	return exactSet(s.seen).AddUniqueBatch(keys, added)
}

func (s linkCheck) AddUniqueBlock(b *Block, added []bool) (int, error) {
	keys := b.Keys()
	for i, k := range keys {
		want := slices.IndexFunc(keys[:i+1], func(o []byte) bool { return bytes.Equal(o, k) })
		if j := b.First(i); j != want {
			s.t.Fatalf("line %d (%q) linked to line %d, want %d", i, k, j, want)
		}
	}
	return s.AddUniqueBatch(keys, added)
}

// TestReadErrorEndsAfterItsLines: a read error ends the run after the
// lines read before it (the last one without "\n" is a line), which are
// written, on every core or on one.
func TestReadErrorEndsAfterItsLines(t *testing.T) {
	boom := errors.New("boom")
	for _, seq := range []bool{false, true} {
		var out bytes.Buffer
		d := New(exactSet{}, &out, Config{Sequential: seq, BufferSize: 64})
		in := io.MultiReader(strings.NewReader(strings.Repeat("a\nb\nc\n", 100)+"partial"), iotest.ErrReader(boom))
		if err := d.Run(in); !errors.Is(err, boom) {
			t.Fatalf("sequential %v: Run = %v, want boom", seq, err)
		}
		d.Flush()
		if out.String() != "a\nb\nc\npartial\n" {
			t.Fatalf("sequential %v: output %q", seq, out.String())
		}
	}
}

// failingWriter fails once it has taken n bytes.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errDiskFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestWriteErrorStopsTheRun: a write error stops Run, which returns it
// wrapped in ErrOutput, on every core or on one.
func TestWriteErrorStopsTheRun(t *testing.T) {
	input := seqInput(500_000)
	for _, seq := range []bool{false, true} {
		d := New(exactSet{}, &failingWriter{n: 100_000}, Config{Sequential: seq})
		err := d.Run(bytes.NewReader(input))
		if !errors.Is(err, ErrOutput) || !errors.Is(err, errDiskFull) {
			t.Fatalf("sequential %v: Run = %v, want ErrOutput wrapping the disk's error", seq, err)
		}
		if st := d.Stats(); st.LinesIn == 500_000 {
			t.Logf("sequential %v: all lines decided before the error was seen", seq)
		}
	}
}

// stallingReader gives its data, then waits in Read until released.
type stallingReader struct {
	data    []byte
	release chan struct{}
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		return n, nil
	}
	<-s.release
	return 0, io.EOF
}

// TestFullFilterStopsAStalledInput: a full filter ends Run at once, with
// the lines before the one that found it full written, though the input
// still has its reader waiting (a pipe that stays open).
func TestFullFilterStopsAStalledInput(t *testing.T) {
	in := &stallingReader{data: seqInput(10_000), release: make(chan struct{})}
	defer close(in.release)
	var out bytes.Buffer
	d := New(newSeen(t, 64, 0.001, 1), &out, Config{BufferSize: 1024})
	done := make(chan error, 1)
	go func() { done <- d.Run(in) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after the filter was full")
	}
	var le *LineError
	if !errors.As(err, &le) || !errors.Is(err, filterfile.ErrFull) {
		t.Fatalf("Run = %v, want a LineError wrapping ErrFull", err)
	}
	d.Flush()
	if got := uint64(bytes.Count(out.Bytes(), []byte{'\n'})); got != le.Line-1 {
		t.Fatalf("full at line %d, %d lines written", le.Line, got)
	}
}

// TestExpectedFalsePositivesBlockByBlock: the expected false positives
// integrated a block at a time agree with the filter's final rate (for a
// cuckoo filter, whose rate grows linearly in its keys, the integral is
// half the final rate times the keys).
func TestExpectedFalsePositivesBlockByBlock(t *testing.T) {
	input := seqInput(100_000)
	seen := newSeen(t, 100_000, 0.01, 1)
	d := New(seen, io.Discard, Config{TrackFalsePositives: true, BufferSize: 4096})
	if err := d.Run(bytes.NewReader(input)); err != nil {
		t.Fatal(err)
	}
	st := d.Stats()
	want := float64(st.Added) * seen.FalsePositiveRate() / 2
	if math.Abs(st.ExpectedFalsePositives-want) > 0.02*want {
		t.Fatalf("expected false positives %.2f, want %.2f ± 2 %%", st.ExpectedFalsePositives, want)
	}
}

// TestAwaitPreparesBlocksNoWorkerTook: the caller's goroutine, waiting
// for a block, prepares the blocks no worker has taken (here there is no
// worker at all): await returns once its block is prepared, the blocks
// before it are left prepared (their tokens sent), and each holds what a
// worker's preparation gives.
func TestAwaitPreparesBlocksNoWorkerTook(t *testing.T) {
	r, _ := testRand(t)
	const size = 4096
	input := craftedInput(r, size)
	input = append(input[:bytes.LastIndexByte(input, '\n')+1], seqInput(2000)...)
	needs := Needs{Keys: true, Hash: true, Links: true}
	// cut returns the input's blocks, unprepared.
	cut := func() []*Block {
		br := &blockReader{r: bytes.NewReader(input)}
		var blocks []*Block
		for {
			b := newBlock(size, needs)
			br.start(b)
			if !br.fill(b) {
				return blocks
			}
			blocks = append(blocks, b)
		}
	}
	blocks, want := cut(), cut()
	if len(blocks) < 3 {
		t.Fatalf("%d blocks", len(blocks))
	}
	worker := newPreparer(needs, nil, size)
	for _, b := range want {
		worker.prepare(b)
	}

	d := &Deduper{ownPrep: newPreparer(needs, nil, size)}
	work := make(chan *Block, len(blocks))
	for _, b := range blocks {
		work <- b
	}
	close(work)
	last := blocks[len(blocks)-1]
	done := make(chan (<-chan *Block))
	go func() { done <- d.await(last, work) }()
	select {
	case <-done:
	case <-time.After(time.Minute): // a guard against a hang, not a timing
		t.Fatal("await did not prepare the blocks it waited behind")
	}
	for i, b := range blocks {
		if b != last {
			select {
			case <-b.ready:
			default:
				t.Fatalf("block %d: prepared without its token", i)
			}
		}
		w := want[i]
		if b.n != w.n || !slices.Equal(b.ends[:b.n], w.ends[:w.n]) || !slices.Equal(b.Hashes(), w.Hashes()) ||
			!slices.EqualFunc(b.Keys(), w.Keys(), bytes.Equal) || !slices.Equal(b.first[:b.n], w.first[:w.n]) {
			t.Fatalf("block %d: %d lines prepared by await, unlike a worker's %d", i, b.n, w.n)
		}
	}
}
