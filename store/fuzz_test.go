package store

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// FuzzRecord: the record decoder never panics, never accepts more bytes
// than it was given, and a record it accepts re-encodes to the same
// bytes.
func FuzzRecord(f *testing.F) {
	f.Add(appendRecord(nil, kindPut, 1, []byte("key"), []byte("value")))
	f.Add(appendRecord(nil, kindPutOver, 300, []byte(""), []byte("v")))
	f.Add(appendRecord(nil, kindDelete, 0, []byte("gone"), nil))
	f.Add([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, errShort) && !errors.Is(err, errBad) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if r.size > len(b) {
			t.Fatalf("record of %d bytes from %d", r.size, len(b))
		}
		again := appendRecord(nil, r.kind, r.seq, r.key, r.value)
		if !bytes.Equal(again, b[:r.size]) {
			// Varints may be written non-minimally by someone else; ours
			// are minimal, and only then must the bytes match.
			if len(again) == r.size {
				t.Fatalf("re-encoding differs:\n%x\n%x", again, b[:r.size])
			}
		}
	})
}

// FuzzRecover writes records (synced, so acknowledged), cuts the log at
// an offset and may add garbage, then reopens: Open succeeds, and every
// record that ended before the cut is there, with the state it gave.
func FuzzRecover(f *testing.F) {
	f.Add([]byte("abcdefgh"), uint16(100), []byte{})
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), uint16(333), []byte{1, 2, 3})
	f.Add([]byte{0, 1, 2, 3, 250, 251, 252, 253}, uint16(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, ops []byte, cut uint16, garbage []byte) {
		if len(ops) > 200 {
			ops = ops[:200]
		}
		fs := NewMemFS()
		s, err := Open("db", WithFS(fs), WithSync(SyncAlways), WithSeed(7), WithAutoCompact(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		// states[i] is the store after the records ending at ends[i].
		type state map[string]string
		cur := state{}
		var ends []int64
		var states []state
		seg := s.active().path
		for i, op := range ops {
			k := fmt.Sprint(op % 16)
			if op >= 224 {
				if ok, _ := s.Delete([]byte(k)); !ok {
					continue
				}
				delete(cur, k)
			} else {
				v := bytes.Repeat([]byte{op}, int(op)%40)
				if err := s.Put([]byte(k), v); err != nil {
					t.Fatal(err)
				}
				cur[k] = string(v)
			}
			_ = i
			snap := state{}
			for a, b := range cur {
				snap[a] = b
			}
			ends = append(ends, s.active().size)
			states = append(states, snap)
		}
		s.Close()
		log := fs.ReadFileBytes(seg)
		c := segHeaderSize + int64(cut)%(int64(len(log))-segHeaderSize+1)
		fs.WriteFileBytes(seg, append(log[:c:c], garbage...))
		s, err = Open("db", WithFS(fs))
		if err != nil {
			t.Fatalf("cut at %d (of %d) + %d bytes of garbage: %v", c, len(log), len(garbage), err)
		}
		defer s.Close()
		want := state{}
		for i, e := range ends {
			if e <= c {
				want = states[i]
			}
		}
		if s.Len() < uint64(len(want)) && len(garbage) == 0 {
			t.Fatalf("cut at %d: %d keys, want %d", c, s.Len(), len(want))
		}
		if len(garbage) == 0 {
			for k, v := range want {
				got, err := s.Get([]byte(k))
				if err != nil || string(got) != v {
					t.Fatalf("cut at %d: key %s: %q %v, want %q", c, k, got, err, v)
				}
			}
			if s.Len() != uint64(len(want)) {
				t.Fatalf("cut at %d: %d keys, want %d", c, s.Len(), len(want))
			}
		}
		if err := s.Put([]byte("after"), []byte("recovery")); err != nil {
			t.Fatal(err)
		}
	})
}
