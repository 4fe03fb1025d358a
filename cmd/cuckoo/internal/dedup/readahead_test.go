package dedup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/dedupkit/cuckoo/cmd/cuckoo/internal/filterfile"
	"github.com/dedupkit/cuckoo/internal/testseed"
)

// never is a read-ahead time bound no test reaches: the reads decide.
const never = time.Hour

// randomLines returns n lines of random length (0 to 40 bytes, some
// bytes '\r' and NUL), the last one without '\n' when open (and then of
// 1 to 40 bytes: an open line of none is no line).
func randomLines(t *testing.T, n int, open bool) []byte {
	r := testseed.Rand(t)
	var b bytes.Buffer
	for i := range n {
		length := r.IntN(41)
		if open && i == n-1 {
			length = 1 + r.IntN(40)
		}
		for range length {
			b.WriteByte("ab\r\x00xyz0123456789"[r.IntN(16)])
		}
		if i < n-1 || !open {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// TestReadAheadWhole reads ahead inputs that end within the limit: the
// lines are counted exactly (a last line without '\n' too), and the
// Reader gives back every byte.
func TestReadAheadWhole(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines int
		open  bool
	}{{"empty", 0, false}, {"one", 1, false}, {"open", 1, true}, {"many", 3000, false}, {"many-open", 3000, true}} {
		t.Run(c.name, func(t *testing.T) {
			in := randomLines(t, c.lines, c.open)
			if c.lines == 0 {
				in = nil
			}
			a := ReadAhead(iotest.HalfReader(bytes.NewReader(in)), 1<<20, never, never)
			if !a.Complete() || a.Full() || a.Bytes() != len(in) {
				t.Fatalf("complete %v, full %v, %d bytes; want complete, %d bytes", a.Complete(), a.Full(), a.Bytes(), len(in))
			}
			if a.Lines() != uint64(c.lines) {
				t.Errorf("%d lines, want %d", a.Lines(), c.lines)
			}
			if got := AheadCapacity(a, 1<<18); got != max(uint64(c.lines), 1) {
				t.Errorf("capacity %d, want the lines, %d", got, max(c.lines, 1))
			}
			checkReadBack(t, a, in, nil)
		})
	}
}

// checkReadBack reads a to its end and checks that it gives in, then err
// (io.EOF as nil).
func checkReadBack(t *testing.T, a *Ahead, in []byte, err error) {
	t.Helper()
	got, gotErr := io.ReadAll(iotest.OneByteReader(io.LimitReader(a, 100)))
	rest, restErr := io.ReadAll(a) // small reads first, then large ones
	got = append(got, rest...)
	if gotErr == nil {
		gotErr = restErr
	}
	if !bytes.Equal(got, in) {
		t.Fatalf("read back %d bytes, not the %d of the input", len(got), len(in))
	}
	if !errors.Is(gotErr, err) || (err == nil) != (gotErr == nil) {
		t.Fatalf("read back error %v, want %v", gotErr, err)
	}
}

// TestReadAheadFull reads ahead an input longer than the limit: it stops
// there, sizes the filter from the lines read, and gives the whole input
// back.
func TestReadAheadFull(t *testing.T) {
	in := randomLines(t, 20000, false)
	a := ReadAhead(bytes.NewReader(in), 4096, never, never)
	if a.Complete() || !a.Full() || a.Bytes() != 4096 {
		t.Fatalf("complete %v, full %v, %d bytes; want full at 4096", a.Complete(), a.Full(), a.Bytes())
	}
	want := uint64(bytes.Count(in[:4096], []byte{'\n'}))
	if a.Lines() != want {
		t.Errorf("%d lines, want %d", a.Lines(), want)
	}
	if got := AheadCapacity(a, 1); got != aheadFactor*want {
		t.Errorf("capacity %d, want %d × %d", got, aheadFactor, want)
	}
	if got := AheadCapacity(a, 1<<30); got != 1<<30 {
		t.Errorf("capacity %d under a floor of 2^30", got)
	}
	checkReadBack(t, a, in, nil)
}

// TestAheadCapacityBound: an input of short lines past the read-ahead
// starts at MaxAheadCapacity, not eight times its lines.
func TestAheadCapacityBound(t *testing.T) {
	a := ReadAhead(strings.NewReader(strings.Repeat("\n", 2<<20)), 1<<20, never, never)
	if got := AheadCapacity(a, 1<<18); got != MaxAheadCapacity {
		t.Errorf("capacity %d, want %d", got, MaxAheadCapacity)
	}
}

// stallReader gives first, then blocks until release is closed, then
// gives rest and err.
type stallReader struct {
	first, rest []byte
	err         error
	release     chan struct{}
	stage       int
}

func (s *stallReader) Read(p []byte) (int, error) {
	switch s.stage {
	case 0:
		s.stage++
		return copy(p, s.first), nil // p is large enough in these tests
	case 1, 2:
		if s.stage == 1 {
			<-s.release
			s.stage++
		}
		n := copy(p, s.rest)
		s.rest = s.rest[n:]
		if len(s.rest) == 0 {
			s.stage++
			return n, s.err
		}
		return n, nil
	}
	if s.err != nil {
		return 0, s.err
	}
	return 0, io.EOF
}

// TestReadAheadStall: an input that pauses (a slow stream) stops the
// read-ahead at the idle bound, with a Read under way; the Reader waits
// for that Read in turn, losing and reordering nothing, and passes on
// the input's error.
func TestReadAheadStall(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		rest int
		err  error
	}{{"eof", 5000, nil}, {"error", 5000, boom}, {"error-only", 0, boom}, {"eof-only", 0, nil}} {
		t.Run(c.name, func(t *testing.T) {
			in := randomLines(t, 400, false)
			s := &stallReader{first: in[:100], rest: in[100 : 100+min(c.rest, len(in)-100)], err: c.err, release: make(chan struct{})}
			in = in[:100+len(s.rest)]
			// It stops at 100 bytes, or at 0 if the first Read is slower
			// than the idle bound: either way with a Read under way.
			a := ReadAhead(s, 1<<20, never, time.Millisecond)
			if a.Complete() || a.Full() || (a.Bytes() != 100 && a.Bytes() != 0) {
				t.Fatalf("complete %v, full %v, %d bytes; want stopped at 100", a.Complete(), a.Full(), a.Bytes())
			}
			if got := AheadCapacity(a, 1<<18); got != 1<<18 {
				t.Errorf("capacity %d, want the floor", got)
			}
			close(s.release)
			checkReadBack(t, a, in, c.err)
		})
	}
	// The total bound stops a stream that never pauses for the idle
	// bound: one line a millisecond.
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				pw.Close()
				return
			case <-time.After(time.Millisecond):
				fmt.Fprintf(pw, "%d\n", i)
			}
		}
	}()
	start := time.Now()
	a := ReadAhead(pr, 1<<20, 20*time.Millisecond, never)
	if a.Complete() || a.Full() {
		t.Fatalf("a slow stream read ahead to its end or its limit")
	}
	if since := time.Since(start); since > 10*time.Second {
		t.Fatalf("read ahead for %v under a bound of 20 ms", since)
	}
	close(stop)
	got, err := io.ReadAll(a)
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(strings.TrimSuffix(string(got), "\n"), "\n") {
		if l != fmt.Sprint(i) {
			t.Fatalf("line %d of the slow stream read back as %q", i, l)
		}
	}
}

// TestReadAheadErrorAtOnce: a read error during the read-ahead comes back
// after the bytes before it.
func TestReadAheadErrorAtOnce(t *testing.T) {
	boom := errors.New("boom")
	in := randomLines(t, 50, false)
	a := ReadAhead(io.MultiReader(bytes.NewReader(in), iotest.ErrReader(boom)), 1<<20, never, never)
	if a.Complete() || a.Full() {
		t.Fatalf("complete %v, full %v after an error", a.Complete(), a.Full())
	}
	checkReadBack(t, a, in, boom)
}

// TestDedupPipeGrows dedups, as 'cuckoo dedup' does a pipe, an input many
// times the read-ahead, through a growing filter sized from it, so that
// the filter adds tables: no line is written twice (no false negative),
// the lines written are the first occurrences in input order less the
// ones dropped as false positives, and those are within the bound the rate
// promises. The seed is fixed: at a bound of 1e-3 over 60,000 new keys
// the expected drops are at most 60 (with this seed 24 are dropped), and
// the test allows 60 + 5σ.
func TestDedupPipeGrows(t *testing.T) {
	const distinct, rate = 60000, 1e-3
	r := testseed.New(testseed.Fixed(t, 7))
	var lines []string
	for i := range distinct {
		l := fmt.Sprintf("key-%d-%d\n", r.Uint64()%1000, i)
		lines = append(lines, l)
		for r.IntN(2) == 0 {
			lines = append(lines, lines[r.IntN(len(lines))])
		}
	}
	in := []byte(strings.Join(lines, ""))
	a := ReadAhead(bytes.NewReader(in), 8192, never, never)
	capacity := AheadCapacity(a, 64)
	seen, err := filterfile.New(filterfile.Spec{Kind: filterfile.CuckooScalable, Capacity: capacity, FPR: rate, Seed: 3, SeedSet: true})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	d := New(seen, &out, Config{TrackFalsePositives: true})
	if err := d.Run(a); err != nil {
		t.Fatal(err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	if g := seen.Capacity(); g <= 4*capacity {
		t.Fatalf("the filter started at %d and holds %d: it should have grown more than 4-fold", capacity, g)
	}
	// Walk the model's output: every line written must be the next first
	// occurrence; the ones skipped are false positives.
	want := strings.SplitAfter(modelDedup(lines, false), "\n")
	want = want[:len(want)-1]
	got := strings.SplitAfter(out.String(), "\n")
	got = got[:len(got)-1]
	dropped, j := 0, 0
	for _, l := range got {
		for j < len(want) && want[j] != l {
			j++
			dropped++
		}
		if j == len(want) {
			t.Fatalf("line %q written out of order or twice", l)
		}
		j++
	}
	dropped += len(want) - j
	st := d.Stats()
	limit := distinct*rate + 5*math.Sqrt(distinct*rate)
	t.Logf("start %d, grown to %d; %d new lines dropped, %.1f expected, at most %.0f allowed", capacity, seen.Capacity(), dropped, st.ExpectedFalsePositives, limit)
	if float64(dropped) > limit {
		t.Errorf("%d new lines dropped, over the rate's bound (%.0f allowed)", dropped, limit)
	}
	if st.LinesIn != uint64(len(lines)) || st.BytesIn != uint64(len(in)) {
		t.Errorf("stats: %d lines, %d bytes in; want %d, %d", st.LinesIn, st.BytesIn, len(lines), len(in))
	}
}
