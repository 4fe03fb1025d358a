package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/codec"
	"github.com/dedupkit/cuckoo/internal/testlong"
)

// smallLogCommands are the writes of the log the damage tests break: every
// kind of record a client's writes make, a few of each.
var smallLogCommands = [][]string{
	{"CF.RESERVE", "fixed", "1000", "EXPANSION", "0", "SEED", "1"},
	{"CF.ADD", "fixed", "a"},
	{"CF.ADDNX", "fixed", "b"},
	{"CF.INSERT", "fixed", "ITEMS", "c", "d"},
	{"CF.DEL", "fixed", "a"},
	{"BF.RESERVE", "bloom", "0.01", "100"},
	{"BF.ADD", "bloom", "x"},
	{"BF.MADD", "bloom", "y", "z"},
	{"CF.ADD", "grown", "https://example.com/a"},
	{"CF.ADD", "grown", "https://example.com/b"},
	{"CF.ADD", "gone", "1"},
	{"DEL", "gone"},
}

// damageLog is a small log and its records.
type damageLog struct {
	data    []byte
	records []logRecord
	ends    []int64 // the offset after each record
}

// logRecord is a record as readLog passes it.
type logRecord struct {
	off   int64
	epoch uint64
	args  [][]byte
}

// newDamageLog writes smallLogCommands with a server, in the log format
// given (1: the records reframed as servers before format 2 wrote them).
func newDamageLog(t *testing.T, format int) damageLog {
	t.Helper()
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	for _, cmd := range smallLogCommands {
		if r := c.do(cmd...); strings.HasPrefix(r, "-") {
			t.Fatalf("%q: %q", cmd, r)
		}
	}
	s.Close()
	var d damageLog
	var err error
	d.data, err = os.ReadFile(logPath(t, cfg.Dir))
	if err != nil {
		t.Fatal(err)
	}
	if format == 1 {
		d.data = reframeV1(d.data)
	}
	end, err := readLogFrom(bytes.NewReader(d.data), int64(len(d.data)), logName(0), maxLogRecord, func(off int64, epoch uint64, args [][]byte) error {
		if off > 0 {
			d.ends = append(d.ends, off)
		}
		rec := logRecord{off, epoch, nil}
		for _, a := range args {
			rec.args = append(rec.args, bytes.Clone(a))
		}
		d.records = append(d.records, rec)
		return nil
	})
	if err != nil || len(d.records) < len(smallLogCommands) {
		t.Fatalf("the log holds %d records (%v), want %d or more", len(d.records), err, len(smallLogCommands))
	}
	d.ends = append(d.ends, end)
	return d
}

// read reads data, the log or a damaged copy, as recovery reads a log
// file, and returns how many records it read and whether each was the
// log's record at its place, and readLog's end and error.
func (d *damageLog) read(data []byte) (n int, same bool, end int64, err error) {
	same = true
	end, err = readLogFrom(bytes.NewReader(data), int64(len(data)), logName(0), maxLogRecord, func(off int64, epoch uint64, args [][]byte) error {
		same = same && n < len(d.records) && d.records[n].off == off && d.records[n].epoch == epoch &&
			slices.EqualFunc(d.records[n].args, args, bytes.Equal)
		n++
		return nil
	})
	return n, same, end, err
}

// reframeV1 returns the records of a log of format 2 in format 1.
func reframeV1(data []byte) []byte {
	var out []byte
	for len(data) > 0 {
		n := int(binary.LittleEndian.Uint32(data) &^ recordFormat2)
		body := data[recordHeader : recordHeader+n]
		out = binary.LittleEndian.AppendUint32(out, uint32(n))
		out = binary.LittleEndian.AppendUint32(out, codec.Checksum(body))
		out = append(out, body...)
		data = data[recordHeader+n:]
	}
	return out
}

// TestLogBitFlipsNeverLoseWrites flips every bit of every record of a log,
// one at a time, in both log formats, and reads it as recovery does: each
// flip either is damage at the record it hit (the server refuses to start,
// TestServeRefusesFlippedLog runs some through the command), or leaves
// every record (here every record was acknowledged). None may pass for a
// torn end that cuts records.
func TestLogBitFlipsNeverLoseWrites(t *testing.T) {
	testlong.SkipQuickRun(t)
	parallel(t)
	for _, format := range []int{2, 1} {
		t.Run(fmt.Sprint("format=", format), func(t *testing.T) {
			parallel(t)
			d := newDamageLog(t, format)
			damaged := make([]byte, len(d.data))
			var refused, whole int
			rec := 0
			for i := range d.data {
				for int64(i) >= d.ends[rec] {
					rec++
				}
				start := int64(0)
				if rec > 0 {
					start = d.ends[rec-1]
				}
				for bit := range 8 {
					copy(damaged, d.data)
					damaged[i] ^= 1 << bit
					n, same, end, err := d.read(damaged)
					var damage *logDamage
					switch {
					case errors.As(err, &damage):
						if damage.offset != start || end != start || !same {
							t.Fatalf("bit %d of byte %d (record %d at byte %d): damage reported at byte %d, read to %d", bit, i, rec, start, damage.offset, end)
						}
						refused++
					case err == nil && same && n == len(d.records):
						whole++
					default:
						t.Fatalf("bit %d of byte %d (record %d): %d of %d records read, then %v: acknowledged writes lost", bit, i, rec, n, len(d.records), err)
					}
				}
			}
			t.Logf("format %d: %d single-bit flips of a log of %d bytes in %d records: %d refused, %d recovered whole",
				format, 8*len(d.data), len(d.data), len(d.records), refused, whole)
		})
	}
}

// TestLogTruncationsRecoverPrefix cuts a log at every offset, and also
// zeros it from every offset on (a machine crash that left blocks
// unwritten), in both formats: each reads as the records before the cut
// and a torn end, which recovery cuts off (TestTornTail).
func TestLogTruncationsRecoverPrefix(t *testing.T) {
	parallel(t)
	for _, format := range []int{2, 1} {
		t.Run(fmt.Sprint("format=", format), func(t *testing.T) {
			parallel(t)
			d := newDamageLog(t, format)
			k := 0
			for cut := range len(d.data) + 1 {
				for k < len(d.ends) && d.ends[k] <= int64(cut) {
					k++
				}
				zeroed := append([]byte(nil), d.data...)
				clear(zeroed[cut:])
				var want int64
				if k > 0 {
					want = d.ends[k-1]
				}
				for _, tc := range []struct {
					what string
					data []byte
				}{{"cut", d.data[:cut]}, {"zeroed", zeroed}} {
					n, same, end, err := d.read(tc.data)
					clean := err == nil && end == int64(len(tc.data))
					if !clean && !errors.Is(err, errTorn) || end != want || n != k || !same {
						t.Fatalf("%s at byte %d: %d records read to byte %d, then %v; want the %d records before it, to byte %d",
							tc.what, cut, n, end, err, k, want)
					}
				}
			}
		})
	}
}

// TestLogFormatUpgrade: a server appends records of format 2 to the log
// file of format 1 an older server left, and a restart reads both.
func TestLogFormatUpgrade(t *testing.T) {
	parallel(t)
	cfg := testConfig(t)
	copyDir(t, "testdata/replay/plan2/log", cfg.Dir)
	old, err := os.ReadFile(filepath.Join(cfg.Dir, logName(0)))
	if err != nil {
		t.Fatal(err)
	}
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	doEach(t, c, ":1\r\n", "CF.ADD fixed after-the-upgrade", "CF.ADD new x")
	want := state(t, c)
	s.Close()
	data, err := os.ReadFile(filepath.Join(cfg.Dir, logName(0)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, old) || binary.LittleEndian.Uint32(data[0:])&recordFormat2 != 0 ||
		binary.LittleEndian.Uint32(data[len(old):])&recordFormat2 == 0 {
		t.Fatal("the log is not the old records of format 1 followed by new ones of format 2")
	}
	_, addr = startServer(t, cfg)
	sameState(t, "after the upgrade", state(t, dial(t, addr)), want)
}

// TestSyncPolicyWords: each policy reads and prints as appendfsync spells
// it, an unknown word is refused, and New refuses a policy that is none
// of the three.
func TestSyncPolicyWords(t *testing.T) {
	for _, tc := range []struct {
		word string
		p    SyncPolicy
	}{{"everysec", SyncEverySecond}, {"always", SyncAlways}, {"no", SyncNever}} {
		p, err := ParseSyncPolicy(strings.ToUpper(tc.word))
		if err != nil || p != tc.p || p.String() != tc.word {
			t.Errorf("ParseSyncPolicy(%q) = %v, %v; want %v", strings.ToUpper(tc.word), p, err, tc.p)
		}
	}
	if p, err := ParseSyncPolicy("never"); err == nil {
		t.Errorf("ParseSyncPolicy(never) = %v, want an error (appendfsync says no)", p)
	}
	cfg := DefaultConfig()
	cfg.Dir = ""
	cfg.Sync = SyncNever + 1
	if s, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Config.Sync") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("New with Sync %v: %v, want an error naming Config.Sync", cfg.Sync, err)
	}
}
