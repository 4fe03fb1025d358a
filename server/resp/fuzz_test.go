package resp_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dedupkit/cuckoo/server/resp"
)

// fuzzLimits are small, so that the fuzzer reaches every limit.
var fuzzLimits = resp.Limits{MaxBulk: 200, MaxArray: 8, MaxInline: 40, MaxCommand: 600}

// randChunkReader returns the data in reads of random sizes from 1 to 17
// bytes, drawn from seed.
type randChunkReader struct {
	data []byte
	rng  *rand.Rand
}

func (c *randChunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(1+c.rng.IntN(17), len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// FuzzReader feeds the Reader arbitrary bytes, whole and cut at the points
// seed chooses. It checks that the Reader never panics, finds the same
// commands and the same error however the input is cut, never returns an
// argument longer than MaxBulk or more than MaxArray of them, and that each
// command, encoded again as a RESP array, reads back as itself.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"*1\r\n$4\r\nPING\r\n",
		"*3\r\n$6\r\nCF.ADD\r\n$4\r\nseen\r\n$3\r\nurl\r\n*2\r\n$9\r\nCF.EXISTS\r\n$1\r\nk\r\n",
		"PING\r\nECHO \"a\\x41 b\" 'c\\'d'\r\n\r\n",
		"*0\r\n*-1\r\n*1\r\n$0\r\n\r\n",
		"*1\r\n$1073741824\r\n",
		"*2\r\n$3\r\nGET\r\n$2\r\nab",
		"*1\r\n$-2\r\n",
	} {
		f.Add([]byte(s), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		whole, errWhole := readAll(resp.NewReader(bytes.NewReader(data), fuzzLimits))
		cut, errCut := readAll(resp.NewReader(&randChunkReader{data: data, rng: rand.New(rand.NewPCG(seed, 0))}, fuzzLimits))
		if !reflect.DeepEqual(whole, cut) {
			t.Fatalf("commands differ: whole %s, cut %s", fmtCmds(whole), fmtCmds(cut))
		}
		if !sameError(errWhole, errCut) {
			t.Fatalf("errors differ: whole %v, cut %v", errWhole, errCut)
		}
		for _, cmd := range whole {
			if len(cmd) == 0 || len(cmd) > fuzzLimits.MaxArray {
				t.Fatalf("command of %d arguments", len(cmd))
			}
			var enc []byte
			enc = resp.AppendArray(enc, len(cmd))
			for _, a := range cmd {
				if len(a) > fuzzLimits.MaxBulk && len(cmd) > 0 {
					t.Fatalf("argument of %d bytes", len(a))
				}
				enc = resp.AppendBulkString(enc, a)
			}
			again, err := readAll(resp.NewReader(bytes.NewReader(enc), resp.Limits{}))
			if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], cmd) {
				t.Fatalf("%q re-encoded reads back as %s, %v", cmd, fmtCmds(again), err)
			}
		}
	})
}

func sameError(a, b error) bool {
	var pa, pb *resp.ProtocolError
	if errors.As(a, &pa) && errors.As(b, &pb) {
		return pa.Reason == pb.Reason
	}
	return a == b
}
