package server

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// objectSeeds returns object encodings of each kind, for the fuzz seeds.
func objectSeeds(t testing.TB) [][]byte {
	var seeds [][]byte
	fs := DefaultFilterSettings()
	for _, mk := range []func(c *call) (*object, error){
		func(c *call) (*object, error) {
			p := defaultCFParams(&fs, 20)
			p.expansion = 0
			return p.newObject(c)
		},
		func(c *call) (*object, error) { p := defaultCFParams(&fs, 20); return p.newObject(c) },
		func(c *call) (*object, error) {
			p := defaultCFParams(&fs, 20)
			p.bucketSize, p.expansion = 3, 0
			return p.newObject(c)
		},
		func(c *call) (*object, error) { p := defaultBFParams(&fs); return p.newObject(c) },
		func(c *call) (*object, error) { p := defaultBFParams(&fs); p.nonScaling = true; return p.newObject(c) },
	} {
		c := &call{s: &Server{cfg: Config{MaxFilterBytes: 1 << 30}, ks: newKeyspace()}}
		o, err := mk(c)
		if err != nil {
			t.Fatal(err)
		}
		if o.cf != nil {
			o.cf.add([]byte("x"))
			o.cf.add([]byte("x"))
		} else {
			o.bf.addUnique([]byte("x"))
		}
		enc, err := o.encode()
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, enc)
	}
	return seeds
}

// FuzzDecodeObject: any bytes given to LOADCHUNK or found in a snapshot
// decode without a panic, and whatever decodes encodes back to the same
// bytes.
func FuzzDecodeObject(f *testing.F) {
	for _, s := range objectSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := decodeObject(data, 0)
		if err != nil {
			return
		}
		enc, err := o.encode()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, data) {
			t.Fatalf("decoded and encoded again: %d bytes differ from the %d given", len(enc), len(data))
		}
	})
}

// FuzzReadLog: any log file is read without a panic; a clean read or a
// torn end covers the file up to where it stops, and a record read is
// never past the end.
func FuzzReadLog(f *testing.F) {
	var valid []byte
	for _, args := range [][]string{
		{"CF.RESERVE", "k", "100", "EXPANSION", "0", "PLAN", "2", "BUCKETS", "30", "SEED", "1"},
		{"CF.ADD", "k", "a"}, {"BF.MADD", "b", "x", "y"}, {"DEL", "k"},
	} {
		valid = append(valid, encodeRecordForTest(3, args...)...)
	}
	f.Add(valid)
	f.Add(reframeV1(valid))
	first := recordHeader + int(binary.LittleEndian.Uint32(valid)&^recordFormat2)
	f.Add(append(reframeV1(valid[:first]), valid[first:]...)) // format 1, then 2
	f.Add(valid[:len(valid)-3])
	f.Add(append(append([]byte(nil), valid...), make([]byte, 20)...))
	f.Add([]byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var last int64 = -1
		end, err := readLog(path, 1<<20, func(off int64, epoch uint64, args [][]byte) error {
			if off <= last || off >= int64(len(data)) || len(args) == 0 {
				t.Fatalf("record at %d after %d, %d args", off, last, len(args))
			}
			last = off
			return nil
		})
		if end > int64(len(data)) || err == nil && end != int64(len(data)) {
			t.Fatalf("stopped at %d of %d with %v", end, len(data), err)
		}
	})
}

// FuzzLoadSnapshot: any snapshot file is loaded or refused without a
// panic, and the one a server wrote loads.
func FuzzLoadSnapshot(f *testing.F) {
	cfg := testConfig(f)
	cfg.Logf = func(string, ...any) {}
	s, addr := startServer(f, cfg)
	c := dial(f, addr)
	for _, cmd := range [][]string{
		{"CF.RESERVE", "fixed", "100", "EXPANSION", "0", "SEED", "1"},
		{"CF.ADD", "fixed", "a"}, {"CF.ADD", "grown", "b"}, {"BF.ADD", "bloom", "c"},
		{"CF.RESERVE", "window", "100", "WINDOW", "60"}, {"CF.ADD", "window", "d"},
	} {
		if r := c.do(cmd...); strings.HasPrefix(r, "-") {
			f.Fatalf("%q: %q", cmd, r)
		}
	}
	if r := c.do("SAVE"); r != "+OK\r\n" {
		f.Fatalf("SAVE: %q", r)
	}
	valid, err := os.ReadFile(filepath.Join(cfg.Dir, snapName))
	if err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(valid[:len(valid)-1])
	f.Add([]byte(snapMagic))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, snapName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := loadSnapshot(path, newKeyspace(), 1<<30)
		if err != nil && bytes.Equal(data, valid) {
			t.Fatalf("the snapshot a server wrote: %v", err)
		}
	})
}
