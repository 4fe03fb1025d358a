package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// scanDumpAll dumps key with SCANDUMP and returns the chunks with their
// iterators.
func scanDumpAll(t *testing.T, c *conn, cmd, key string) (iters []string, chunks []string) {
	t.Helper()
	it := "0"
	for range 10000 {
		raw := c.do(cmd, key, it)
		// *2\r\n:<it>\r\n then $n\r\n<chunk>\r\n or $-1\r\n
		rest, ok := strings.CutPrefix(raw, "*2\r\n:")
		if !ok {
			t.Fatalf("%s %s %s: %q", cmd, key, it, raw)
		}
		next, rest, _ := strings.Cut(rest, "\r\n")
		if next == "0" {
			if rest != "$-1\r\n" {
				t.Fatalf("last reply %q, want a null chunk", raw)
			}
			return iters, chunks
		}
		n, _ := strconv.Atoi(rest[1:strings.Index(rest, "\r\n")])
		body := rest[strings.Index(rest, "\r\n")+2:]
		iters = append(iters, next)
		chunks = append(chunks, body[:n])
		it = next
	}
	t.Fatal("the dump does not end")
	return nil, nil
}

// TestDumpRoundTrip dumps filters of every kind in several chunks and
// loads them into new keys: each copy dumps to the same bytes (an equal
// filter) and holds every item.
func TestDumpRoundTrip(t *testing.T) {
	testlong.SkipQuickRun(t)
	old := maxDumpChunk
	maxDumpChunk = 1000
	defer func() { maxDumpChunk = old }()
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	for _, tc := range []struct {
		name, reserve, add, exists, dump, load string
	}{
		{"cf-fixed", "CF.RESERVE %s 2000 EXPANSION 0 FINGERPRINT 12", "CF.ADD", "CF.EXISTS", "CF.SCANDUMP", "CF.LOADCHUNK"},
		{"cf-growing", "CF.RESERVE %s 100 EXPANSION 2", "CF.ADD", "CF.EXISTS", "CF.SCANDUMP", "CF.LOADCHUNK"},
		{"cf-empty", "CF.RESERVE %s 100 FPR 0.001", "", "", "CF.SCANDUMP", "CF.LOADCHUNK"},
		{"bf-fixed", "BF.RESERVE %s 0.01 3000 NONSCALING", "BF.ADD", "BF.EXISTS", "BF.SCANDUMP", "BF.LOADCHUNK"},
		{"bf-scalable", "BF.RESERVE %s 0.001 100 EXPANSION 3", "BF.ADD", "BF.EXISTS", "BF.SCANDUMP", "BF.LOADCHUNK"},
	} {
		t.Run("kind="+tc.name, func(t *testing.T) {
			src, dst := tc.name, tc.name+"-copy"
			if got := c.do(strings.Fields(fmt.Sprintf(tc.reserve, src))...); got != "+OK\r\n" {
				t.Fatal(got)
			}
			for i := range 1500 {
				if tc.add != "" {
					c.do(tc.add, src, fmt.Sprint("item", i))
				}
			}
			if tc.name == "cf-growing" {
				c.do("CF.DEL", src, "item7") // the deletes counter travels too
			}
			iters, chunks := scanDumpAll(t, c, tc.dump, src)
			if tc.name != "cf-empty" && len(chunks) < 2 {
				t.Fatalf("%d chunks, want several", len(chunks))
			}
			for i := range chunks {
				if got := c.do(tc.load, dst, iters[i], chunks[i]); got != "+OK\r\n" {
					t.Fatalf("chunk %d: %q", i, got)
				}
			}
			_, again := scanDumpAll(t, c, tc.dump, dst)
			if strings.Join(again, "") != strings.Join(chunks, "") {
				t.Fatal("the copy dumps to other bytes than the original")
			}
			for i := range 1500 {
				if tc.exists == "" || tc.name == "cf-growing" && i == 7 {
					continue
				}
				if got := c.do(tc.exists, dst, fmt.Sprint("item", i)); got != ":1\r\n" {
					t.Fatalf("item%d missing from the copy: %q", i, got)
				}
			}
			if got := c.do(tc.load, dst, iters[0], chunks[0]); got != "-ERR item exists\r\n" {
				t.Fatalf("loading over an existing key: %q", got)
			}
		})
	}
}

// TestDumpIsASnapshot: the chunks after the first come from the encoding
// taken at iterator 0, so writes during a dump do not tear it.
func TestDumpIsASnapshot(t *testing.T) {
	old := maxDumpChunk
	maxDumpChunk = 500
	defer func() { maxDumpChunk = old }()
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.RESERVE", "k", "1000", "EXPANSION", "0")
	for i := range 500 {
		c.do("CF.ADD", "k", fmt.Sprint(i))
	}
	first := c.do("CF.SCANDUMP", "k", "0")
	it := strings.Split(first, "\r\n")[1][1:]
	for i := range 100 {
		c.do("CF.ADD", "k", fmt.Sprint("late", i))
	}
	var chunks []string
	iters := []string{it}
	chunks = append(chunks, first[strings.Index(first, "$"):])
	for {
		raw := c.do("CF.SCANDUMP", "k", it)
		it = strings.Split(raw, "\r\n")[1][1:]
		if it == "0" {
			break
		}
		iters = append(iters, it)
		chunks = append(chunks, raw[strings.Index(raw, "$"):])
	}
	for i := range chunks {
		body := chunks[i][strings.Index(chunks[i], "\r\n")+2 : len(chunks[i])-2]
		if got := c.do("CF.LOADCHUNK", "copy", iters[i], body); got != "+OK\r\n" {
			t.Fatalf("chunk %d: %q", i, got)
		}
	}
	if got := c.do("CF.EXISTS", "copy", "499"); got != ":1\r\n" {
		t.Fatalf("an item added before the dump: %q", got)
	}
	if got := c.do("CF.INFO", "copy"); !strings.Contains(got, "Number of items inserted\r\n:500\r\n") {
		t.Fatalf("the copy is not the filter as it was at iterator 0: %q", got)
	}
}

// TestLoadChunkDamage: a damaged or misplaced chunk is refused, and the
// key is not created.
func TestLoadChunkDamage(t *testing.T) {
	old := maxDumpChunk
	maxDumpChunk = 300
	defer func() { maxDumpChunk = old }()
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.RESERVE", "k", "500")
	for i := range 300 {
		c.do("CF.ADD", "k", fmt.Sprint(i))
	}
	iters, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "k")
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	bad := []byte(chunks[1])
	bad[len(bad)/2] ^= 0x40
	for i := range chunks {
		chunk := chunks[i]
		if i == 1 {
			chunk = string(bad)
		}
		got := c.do("CF.LOADCHUNK", "copy", iters[i], chunk)
		want := "+OK\r\n"
		if i == len(chunks)-1 {
			want = "-Couldn't load chunk!\r\n"
		}
		if got != want {
			t.Fatalf("chunk %d: %q, want %q", i, got, want)
		}
	}
	if got := c.do("EXISTS", "copy"); got != ":0\r\n" {
		t.Fatalf("a damaged load created the key: %q", got)
	}
	// Out of order: the second chunk first.
	if got := c.do("CF.LOADCHUNK", "copy2", iters[1], chunks[1]); got != "-Invalid position\r\n" {
		t.Fatalf("a chunk without its start: %q", got)
	}
	// The first chunk, then the third: a gap.
	c.do("CF.LOADCHUNK", "copy2", iters[0], chunks[0])
	if got := c.do("CF.LOADCHUNK", "copy2", iters[2], chunks[2]); got != "-Invalid position\r\n" {
		t.Fatalf("a chunk after a gap: %q", got)
	}
	// A Bloom chunk into a cuckoo load.
	if got := c.do("BF.LOADCHUNK", "copy2", iters[1], chunks[1]); got != "-ERR invalid offset - no link found\r\n" {
		t.Fatalf("a cuckoo dump continued as Bloom: %q", got)
	}
	// A cuckoo dump loaded as Bloom.
	if got := c.do("BF.LOADCHUNK", "x", iters[0], chunks[0]); got != "+OK\r\n" {
		t.Fatalf("first chunk: %q", got)
	}
	for i := 1; i < len(chunks); i++ {
		got := c.do("BF.LOADCHUNK", "x", iters[i], chunks[i])
		if i == len(chunks)-1 && got != "-ERR received bad data\r\n" {
			t.Fatalf("a cuckoo dump loaded as Bloom: %q", got)
		}
	}
	// A dump larger than the server accepts.
	cfg := testConfig(t)
	cfg.MaxFilterBytes = int64(len(strings.Join(chunks, ""))) - 1
	_, addr = startServer(t, cfg)
	if got := dial(t, addr).do("CF.LOADCHUNK", "copy3", iters[0], chunks[0]); got != "-ERR dump larger than the server accepts\r\n" {
		t.Fatalf("a dump past MaxFilterBytes: %q", got)
	}
}

// TestLoadChunkLogsChunks: a filter loaded with LOADCHUNK goes to the log
// in chunks of SCANDUMP's size (a dump of many GB in one record would be
// past what a recovery reads), and a restart from the log alone gives
// back the same filter.
func TestLoadChunkLogsChunks(t *testing.T) {
	old := maxDumpChunk
	maxDumpChunk = 1000
	defer func() { maxDumpChunk = old }()
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	if got := c.do("CF.RESERVE", "src", "2000", "EXPANSION", "0"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	for i := range 1500 {
		c.do("CF.ADD", "src", fmt.Sprint("item", i))
	}
	iters, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "src")
	for i := range chunks {
		if got := c.do("CF.LOADCHUNK", "dst", iters[i], chunks[i]); got != "+OK\r\n" {
			t.Fatalf("chunk %d: %q", i, got)
		}
	}
	s.Close() // no snapshot: the log alone
	data, err := os.ReadFile(filepath.Join(cfg.Dir, logName(0)))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "CF.LOADCHUNK"); n < len(chunks) || len(chunks) < 2 {
		t.Fatalf("%d LOADCHUNK records in the log for a dump of %d chunks", n, len(chunks))
	}
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	_, again := scanDumpAll(t, c, "CF.SCANDUMP", "dst")
	if strings.Join(again, "") != strings.Join(chunks, "") {
		t.Fatal("after the replay the copy dumps to other bytes")
	}
}

// TestDelDropsPendingLoad: DEL of a key whose LOADCHUNK was begun and
// never finished frees the chunks received, which count against
// maxmemory: the key does not exist yet, and without this an abandoned
// load would hold its memory until FLUSHALL or a restart. The load cannot
// go on after it.
func TestDelDropsPendingLoad(t *testing.T) {
	old := maxDumpChunk
	maxDumpChunk = 300
	defer func() { maxDumpChunk = old }()
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.RESERVE", "src", "500")
	for i := range 300 {
		c.do("CF.ADD", "src", fmt.Sprint(i))
	}
	iters, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "src")
	if len(chunks) < 2 {
		t.Fatalf("%d chunks", len(chunks))
	}
	before := s.ks.used.Load()
	if got := c.do("CF.LOADCHUNK", "dst", iters[0], chunks[0]); got != "+OK\r\n" {
		t.Fatalf("first chunk: %q", got)
	}
	if held := s.ks.used.Load() - before; held != int64(len(chunks[0])) {
		t.Fatalf("the pending load counts %d bytes, want %d", held, len(chunks[0]))
	}
	if got := c.do("DEL", "dst"); got != ":0\r\n" {
		t.Fatalf("DEL of a key being loaded: %q, want 0 (it does not exist yet)", got)
	}
	if held := s.ks.used.Load() - before; held != 0 {
		t.Fatalf("after DEL the abandoned load still counts %d bytes", held)
	}
	if got := c.do("CF.LOADCHUNK", "dst", iters[1], chunks[1]); got != "-Invalid position\r\n" {
		t.Fatalf("a load continued after DEL: %q", got)
	}
}
