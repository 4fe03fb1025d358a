package kafkadedup

import (
	"bytes"
	"errors"
	"testing"
)

func TestPointerRoundTrips(t *testing.T) {
	for _, p := range []pointer{
		{base: 0},
		{base: 12345},
		{base: 7, statePartition: 3, offset: 99, chunks: 4, size: 123456, id: 0xdeadbeef},
		{base: 1 << 62, statePartition: 1<<31 - 1, offset: 1 << 62, chunks: 1, size: 1, id: 1<<64 - 1},
	} {
		got, ours, err := parsePointer(p.String())
		if err != nil || !ours || got != p {
			t.Errorf("%q parses as %+v, %v, %v", p.String(), got, ours, err)
		}
	}
	for _, s := range []string{"", "member-1", "cuckoo-kafkadedup", "cuckoo-kafkadedup-other base=1"} {
		if _, ours, err := parsePointer(s); ours || err != nil {
			t.Errorf("%q: ours %v, %v; want another's metadata", s, ours, err)
		}
	}
	for _, s := range []string{
		"cuckoo-kafkadedup/1 ", "cuckoo-kafkadedup/1 base=", "cuckoo-kafkadedup/1 base=-1", "cuckoo-kafkadedup/1 base=01",
		"cuckoo-kafkadedup/1 base=1 snap=1:2:3:4", "cuckoo-kafkadedup/1 base=1 snap=1:2:0:4:0000000000000001",
		"cuckoo-kafkadedup/1 base=1 snap=1:2:3:4:1", "cuckoo-kafkadedup/1 base=1 snap=+1:2:3:4:0000000000000001",
		"cuckoo-kafkadedup/1 base=1 snap=1:2:3:4:0000000000000001 more",
	} {
		if _, ours, err := parsePointer(s); !ours || !errors.Is(err, ErrState) {
			t.Errorf("%q: ours %v, %v; want a damaged pointer", s, ours, err)
		}
	}
}

// A pointer this package wrote in a version this build does not read (a
// newer one, after a rollback), or one cut short before its version's
// end, is state that cannot be restored: an error, never taken for
// another consumer's metadata, which would start the partition afresh
// with an empty filter and let duplicates through.
func TestPointerOfAnotherVersionIsErrState(t *testing.T) {
	for _, s := range []string{
		"cuckoo-kafkadedup/2 base=1", "cuckoo-kafkadedup/2", "cuckoo-kafkadedup/10 base=1 snap=1:2:3:4:0000000000000001",
		"cuckoo-kafkadedup/1", "cuckoo-kafkadedup/", "cuckoo-kafkadedup/1\tbase=1",
	} {
		if _, ours, err := parsePointer(s); !ours || !errors.Is(err, ErrState) {
			t.Errorf("%q: ours %v, %v; want ErrState", s, ours, err)
		}
	}
}

// FuzzParsePointer: never panics; what parses is ours only with the
// prefix, and prints back as given.
func FuzzParsePointer(f *testing.F) {
	f.Add("cuckoo-kafkadedup/1 base=7 snap=3:99:4:123456:00000000deadbeef")
	f.Add("cuckoo-kafkadedup/1 base=0")
	f.Add("member-1")
	f.Fuzz(func(t *testing.T, s string) {
		p, ours, err := parsePointer(s)
		if err == nil && ours && p.String() != s {
			t.Fatalf("%q parses as %+v, which prints as %q", s, p, p.String())
		}
	})
}

// FuzzParseChunk: never panics, and a chunk that parses carries its
// header and payload back unchanged.
func FuzzParseChunk(f *testing.F) {
	f.Add(chunkHeader{id: 5, base: 10, index: 1, chunks: 3}.append(nil), []byte("payload"))
	f.Add([]byte("CKKS"), []byte{})
	f.Fuzz(func(t *testing.T, head, payload []byte) {
		v := append(append([]byte{}, head...), payload...)
		h, got, err := parseChunk(v)
		if err != nil {
			if !errors.Is(err, ErrState) {
				t.Fatalf("error %v does not wrap ErrState", err)
			}
			return
		}
		if again := append(h.append(nil), got...); !bytes.Equal(again, v) {
			t.Fatalf("%x re-encodes as %x", v, again)
		}
	})
}
