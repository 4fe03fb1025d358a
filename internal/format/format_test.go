package format

import (
	"bytes"
	"errors"
	"testing"

	"github.com/dedupkit/cuckoo/internal/codec"
)

// samples returns one header of each cuckoo kind, with every field set
// to a value of its own, and the function that reads it back.
func samples() map[string]struct {
	bytes []byte
	read  func(*codec.Decoder) (any, error)
} {
	table := TableHeader{Version: Latest, Flags: FlagSemiSort, Slots: 4, FPBits: 13, MaxKicks: 500, Seed: 1<<63 | 7,
		Capacity: 1000, Buckets: 256, Items: 999, Words: 208, Counters: 3, Segments: 1}
	chain := ChainHeader{Version: Latest, Flags: FlagSemiSort, Slots: 4, FPBits: 12, MaxKicks: 500, Seed: 42,
		Initial: 40, Factor: 2, Bound: 0.01, First: 1, Tables: 3, Overflow: 2}
	window := WindowHeader{Version: Latest, Slots: 4, FPBits: 12, StampBits: 4, Epochs: 14, MaxKicks: 500, Seed: 42,
		PerWindow: 200, Window: 14 * 3600e9, Epoch: -5, Cursor: 17, Buckets: 64, Words: 64}
	return map[string]struct {
		bytes []byte
		read  func(*codec.Decoder) (any, error)
	}{
		"table":  {table.Append(nil), func(d *codec.Decoder) (any, error) { return ReadTableHeader(d) }},
		"chain":  {chain.Append(nil), func(d *codec.Decoder) (any, error) { return ReadChainHeader(d) }},
		"window": {window.Append(nil), func(d *codec.Decoder) (any, error) { return ReadWindowHeader(d) }},
	}
}

// reappend returns the bytes Append writes for a header Read returned.
func reappend(h any) []byte {
	switch h := h.(type) {
	case TableHeader:
		return h.Append(nil)
	case ChainHeader:
		return h.Append(nil)
	case WindowHeader:
		return h.Append(nil)
	}
	panic("not a header")
}

func TestHeadersRoundTripAtTheirSizes(t *testing.T) {
	sizes := map[string]int{"table": TableHeaderSize, "chain": ChainHeaderSize, "window": WindowHeaderSize}
	for name, s := range samples() {
		if len(s.bytes) != sizes[name] {
			t.Errorf("%s: Append wrote %d bytes, want %d", name, len(s.bytes), sizes[name])
		}
		h, err := s.read(codec.NewBytesDecoder(s.bytes))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if again := reappend(h); !bytes.Equal(again, s.bytes) {
			t.Errorf("%s: read and appended again:\n%x\nwant\n%x", name, again, s.bytes)
		}
		// Write through an Encoder gives the same bytes, then the trailer.
		var buf bytes.Buffer
		e := codec.NewEncoder(&buf, 0)
		switch h := h.(type) {
		case TableHeader:
			h.Write(e)
		case ChainHeader:
			h.Write(e)
		case WindowHeader:
			h.Write(e)
		}
		if _, err := e.Finish(); err != nil {
			t.Fatal(err)
		}
		if want := codec.AppendChecksum(bytes.Clone(s.bytes)); !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s: Write and Finish wrote %x, want %x", name, buf.Bytes(), want)
		}
	}
}

// put returns a copy of b with byte i set to v.
func put(b []byte, i int, v byte) []byte {
	b = bytes.Clone(b)
	b[i] = v
	return b
}

func TestReadersRejectWhatTheFormatFixes(t *testing.T) {
	table := samples()["table"].bytes
	window := samples()["window"].bytes
	bloom := AppendStart(nil, BloomBlocked)
	for _, c := range []struct {
		name string
		data []byte
		read func(*codec.Decoder) (any, error)
		want error
	}{
		{"magic", put(table, 0, 'X'), readTable, ErrNotFilter},
		{"a Bloom file", append(bloom, make([]byte, 80)...), readTable, ErrNotFilter},
		{"version 0", put(table, 4, 0), readTable, ErrVersion},
		{"version 2", put(table, 4, 2), readTable, ErrVersion},
		{"version 256", put(table, 5, 1), readTable, ErrVersion},
		{"a window read as a table", window, readTable, ErrKind},
		{"a table read as a window", table, readWindow, ErrKind},
		{"kind 9", put(table, 6, 9), readTable, ErrKind},
		{"hash 0: a file from before format 1", put(table, 10, 0), readTable, ErrPreV1},
		{"hash 0 of another kind", put(put(window, 10, 0), 6, 2), readTable, ErrPreV1},
		{"hash 2", put(table, 10, 2), readTable, nil},
		{"reserved prologue byte", put(table, 11, 1), readTable, nil},
		{"reserved table field", put(table, 70, 1), readTable, nil},
		{"unknown table flag", put(table, 7, 4), readTable, nil},
		{"flag of a window", put(window, 7, FlagSemiSort), readWindow, nil},
		{"reserved window byte 14", put(window, 14, 1), readWindow, nil},
		{"reserved window byte 21", put(window, 21, 1), readWindow, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.read(codec.NewBytesDecoder(c.data))
			if !errors.Is(err, ErrHeader) || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("error %v; want one wrapping ErrHeader and %v", err, c.want)
			}
		})
	}
	// The message of a file from before format 1 is ErrPreV1's alone.
	_, err := ReadTableHeader(codec.NewBytesDecoder(put(table, 10, 0)))
	if err.Error() != ErrPreV1.Error() {
		t.Errorf("pre-format-1 message %q", err)
	}
}

func readTable(d *codec.Decoder) (any, error)  { return ReadTableHeader(d) }
func readWindow(d *codec.Decoder) (any, error) { return ReadWindowHeader(d) }

func TestEveryTruncatedHeaderFails(t *testing.T) {
	for name, s := range samples() {
		for cut := range len(s.bytes) {
			if _, err := s.read(codec.NewBytesDecoder(s.bytes[:cut])); !errors.Is(err, codec.ErrTruncated) {
				t.Fatalf("%s cut at %d: %v, want ErrTruncated", name, cut, err)
			}
		}
	}
}

func TestSniffTellsEveryKind(t *testing.T) {
	for _, k := range []Kind{Filter, Scalable, Window, BloomBlocked, BloomClassic, BloomCounting, BloomScalable} {
		s, err := Sniff(AppendStart(nil, k))
		if err != nil || s.Kind != k || s.Version != Latest {
			t.Errorf("Sniff of %v = %+v, %v", k, s, err)
		}
		if !k.Known() || k.String() == "" {
			t.Errorf("%v: known %v", k, k.Known())
		}
	}
	for _, c := range []struct {
		name string
		head []byte
		want error
	}{
		{"short", []byte("CKOO\x01\x00"), ErrNotFilter},
		{"png", []byte("\x89PNG\r\n\x1a\n"), ErrNotFilter},
		{"unknown cuckoo kind", put(AppendStart(nil, Filter), 6, 9), ErrKind},
		{"unknown Bloom kind", put(AppendStart(nil, BloomBlocked), 6, 0), ErrKind},
		{"version 2", put(AppendStart(nil, BloomScalable), 4, 2), ErrVersion},
	} {
		s, err := Sniff(c.head)
		if !errors.Is(err, c.want) || !errors.Is(err, ErrHeader) {
			t.Errorf("%s: %+v, %v; want %v", c.name, s, err, c.want)
		}
	}
	// A version this build does not read still names the file's kind.
	if s, _ := Sniff(put(AppendStart(nil, BloomScalable), 4, 2)); s.Kind != BloomScalable || s.Version != 2 {
		t.Errorf("Sniff of a version-2 Bloom Scalable = %+v", s)
	}
}

func TestReadStartOfEachFamily(t *testing.T) {
	for _, k := range []Kind{Filter, BloomCounting} {
		s, err := ReadStart(codec.NewBytesDecoder(AppendStart(nil, k)), k.Family())
		if err != nil || s.Kind != k || s.Version != Latest {
			t.Errorf("%v: %+v, %v", k, s, err)
		}
		if err := ExpectKind(s, Scalable, BloomScalable); !errors.Is(err, ErrKind) {
			t.Errorf("ExpectKind of %v: %v", k, err)
		}
	}
	other := map[Family]Family{Cuckoo: Bloom, Bloom: Cuckoo}
	for f, o := range other {
		if _, err := ReadStart(codec.NewBytesDecoder([]byte(o.Magic()+"\x01\x00\x01")), f); !errors.Is(err, ErrNotFilter) {
			t.Errorf("a %v file read as %v: %v", o, f, err)
		}
	}
}

// FuzzReadHeader: no input makes a reader panic; each fails with a header
// error or a truncation, or reads a header that Append writes back as the
// input's first bytes (every byte the format fixes was checked).
func FuzzReadHeader(f *testing.F) {
	for _, s := range samples() {
		f.Add(s.bytes)
	}
	f.Add(AppendStart(nil, BloomCounting))
	f.Add([]byte("CKOO\x02\x00\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, read := range []func(*codec.Decoder) (any, error){
			readTable, readWindow,
			func(d *codec.Decoder) (any, error) { return ReadChainHeader(d) },
		} {
			h, err := read(codec.NewBytesDecoder(data))
			if err != nil {
				if !errors.Is(err, ErrHeader) && !errors.Is(err, codec.ErrTruncated) {
					t.Fatalf("error %v is neither a header error nor a truncation", err)
				}
				continue
			}
			if again := reappend(h); !bytes.HasPrefix(data, again) {
				t.Fatalf("read %+v from %x, which appends as %x", h, data, again)
			}
		}
		if s, err := Sniff(data); err == nil && (!s.Kind.Known() || !Readable(s.Version)) {
			t.Fatalf("Sniff accepted %+v", s)
		} else if err != nil && !errors.Is(err, ErrHeader) {
			t.Fatalf("Sniff error %v is not a header error", err)
		}
	})
}
