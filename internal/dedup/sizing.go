package dedup

import (
	"bytes"
	"io"
	"math"
)

// Sampling parameters of EstimateLines.
const (
	exactBelow  = 8 << 20  // files up to this size are counted exactly
	sampleCount = 64       // chunks read from a larger file
	sampleSize  = 64 << 10 // bytes per chunk
)

// EstimateLines estimates the number of lines in r, a file of size bytes,
// from above: the capacity to size a filter with so that the file's
// distinct lines fit, since there are never more distinct lines than lines.
// A file up to 8 MiB is counted exactly; a larger one is sampled (64
// chunks of 64 KiB, evenly spread), and the estimate has a margin of 10 %
// plus 1,000 lines for the sampling error. A file with no line break in
// the samples gets an estimate of one line per 64 KiB, plus the margin.
//
// It reads at most 8 MiB and never moves a file offset (it uses ReadAt).
func EstimateLines(r io.ReaderAt, size int64) (uint64, error) {
	if size <= 0 {
		return 0, nil
	}
	if size <= exactBelow {
		buf := make([]byte, size)
		n, err := r.ReadAt(buf, 0)
		if err != nil && err != io.EOF {
			return 0, err
		}
		lines := uint64(bytes.Count(buf[:n], []byte{'\n'}))
		if n > 0 && buf[n-1] != '\n' {
			lines++
		}
		return lines, nil
	}
	buf := make([]byte, sampleSize)
	var seen, breaks uint64
	step := (size - sampleSize) / (sampleCount - 1)
	for i := int64(0); i < sampleCount; i++ {
		n, err := r.ReadAt(buf, i*step)
		if err != nil && err != io.EOF {
			return 0, err
		}
		seen += uint64(n)
		breaks += uint64(bytes.Count(buf[:n], []byte{'\n'}))
	}
	density := float64(max(breaks, 1)) / float64(max(seen, 1))
	est := float64(size)*density*1.1 + 1000
	if est >= math.MaxUint64/2 {
		return math.MaxUint64 / 2, nil
	}
	return uint64(est), nil
}
