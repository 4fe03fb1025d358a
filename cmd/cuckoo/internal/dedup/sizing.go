package dedup

import (
	"bytes"
	"io"
	"math"
)

// Sampling parameters of EstimateLines.
const (
	// DefaultEstimateBudget is the most bytes EstimateLines reads for one
	// file given the whole budget: files up to this size are counted
	// exactly.
	DefaultEstimateBudget = 8 << 20
	sampleSize            = 64 << 10 // bytes per sampled chunk
)

// EstimateLines estimates the number of lines in r, a file of size bytes,
// from above: the capacity to size a filter with so that the file's
// distinct lines fit, since there are never more distinct lines than lines.
// It reads at most budget bytes (DefaultEstimateBudget when budget <= 0):
// a file that fits is counted exactly; a larger one is sampled with chunks
// of 64 KiB evenly spread over it, half the budget's worth, and the
// estimate has a margin of 5 % plus 1,000 lines for the sampling error. A
// file with no line break in the samples gets an estimate of one line per
// sampled byte count, plus the margin.
//
// It never moves a file offset (it uses ReadAt). To estimate many files,
// share one budget among them in proportion to their sizes, so that the
// files are not read twice in full.
func EstimateLines(r io.ReaderAt, size, budget int64) (uint64, error) {
	if size <= 0 {
		return 0, nil
	}
	if budget <= 0 {
		budget = DefaultEstimateBudget
	}
	chunk := min(int64(sampleSize), size)
	buf := make([]byte, chunk)
	if size <= budget {
		// Counted a chunk at a time: a buffer of the whole file would
		// stay in the heap, and in the process's peak, for the run.
		var lines uint64
		last := byte('\n') // the last byte read
		for off := int64(0); off < size; {
			n, err := r.ReadAt(buf[:min(chunk, size-off)], off)
			if err != nil && err != io.EOF {
				return 0, err
			}
			if n == 0 {
				break // the file is shorter than size now
			}
			lines += uint64(bytes.Count(buf[:n], []byte{'\n'}))
			last, off = buf[n-1], off+int64(n)
		}
		if last != '\n' {
			lines++ // a last line without a line end
		}
		return lines, nil
	}
	chunks := max(budget/2/sampleSize, 1)
	var seen, breaks uint64
	step := int64(0)
	if chunks > 1 {
		step = (size - chunk) / (chunks - 1)
	}
	for i := int64(0); i < chunks; i++ {
		n, err := r.ReadAt(buf, i*step)
		if err != nil && err != io.EOF {
			return 0, err
		}
		seen += uint64(n)
		breaks += uint64(bytes.Count(buf[:n], []byte{'\n'}))
	}
	density := float64(max(breaks, 1)) / float64(max(seen, 1))
	est := float64(size)*density*1.05 + 1000
	if est >= math.MaxUint64/2 {
		return math.MaxUint64 / 2, nil
	}
	return uint64(est), nil
}

// Sizing a growing filter for an input of unknown size from its start
// (ReadAhead).
const (
	// aheadFactor is how many times the lines read ahead a growing filter
	// starts with room for when the input goes on past them: the lines of
	// 64 MiB of input like its first 8 MiB.
	aheadFactor = 8
	// MaxAheadCapacity bounds that start: about 20 MiB of filter at the
	// default rate, for an input of at least ReadAheadBytes.
	MaxAheadCapacity = 1 << 23
)

// AheadCapacity returns the capacity to start a growing filter at for an
// input of unknown size whose start a holds: its lines when a holds the
// whole input (as EstimateLines counts a small file); when it goes on,
// aheadFactor times the lines read ahead, at least floor and at most
// MaxAheadCapacity (or floor, if larger). A filter that grows keeps its
// false-positive rate below its bound whatever it starts at: this only
// spares a large input the tables a small start adds, each of which every
// lookup of a new key probes.
func AheadCapacity(a *Ahead, floor uint64) uint64 {
	if a.Complete() {
		return max(a.Lines(), 1)
	}
	return max(floor, min(aheadFactor*a.Lines(), MaxAheadCapacity))
}
