package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// scanDumpAll dumps key with SCANDUMP and returns the chunks with their
// iterators.
func scanDumpAll(t *testing.T, c *conn, cmd, key string) (iters []string, chunks []string) {
	t.Helper()
	return scanDumpFrom(t, c, cmd, key, "0")
}

// scanDumpFrom goes on with a dump of key from iterator it to its end and
// returns the chunks with the iterators that follow them.
func scanDumpFrom(t *testing.T, c *conn, cmd, key, it string) (iters []string, chunks []string) {
	t.Helper()
	for range 10000 {
		next, chunk := scanDumpStep(t, c, cmd, key, it)
		if next == "0" {
			return iters, chunks
		}
		iters = append(iters, next)
		chunks = append(chunks, chunk)
		it = next
	}
	t.Fatal("the dump does not end")
	return nil, nil
}

// scanDumpStep asks for the chunk of key's dump at iterator it and returns
// the next iterator ("0" at the end) and the chunk.
func scanDumpStep(t *testing.T, c *conn, cmd, key, it string) (next, chunk string) {
	t.Helper()
	raw := c.do(cmd, key, it)
	// *2\r\n:<it>\r\n then $n\r\n<chunk>\r\n or $-1\r\n
	rest, ok := strings.CutPrefix(raw, "*2\r\n:")
	if !ok {
		t.Fatalf("%s %s %s: %q", cmd, key, it, short(raw))
	}
	next, rest, _ = strings.Cut(rest, "\r\n")
	if next == "0" {
		if rest != "$-1\r\n" {
			t.Fatalf("last reply %q, want a null chunk", raw)
		}
		return next, ""
	}
	n, _ := strconv.Atoi(rest[1:strings.Index(rest, "\r\n")])
	body := rest[strings.Index(rest, "\r\n")+2:]
	return next, body[:n]
}

// withDumpChunk makes SCANDUMP's chunks at most n bytes until the test
// ends.
func withDumpChunk(t *testing.T, n int64) {
	old := maxDumpChunk
	maxDumpChunk = n
	t.Cleanup(func() { maxDumpChunk = old })
}

// filledCF creates key, a cuckoo filter for 500 items (with the further
// CF.RESERVE options given), holding the items "0" to "299".
func filledCF(c *conn, key string, opts ...string) {
	c.do(append([]string{"CF.RESERVE", key, "500"}, opts...)...)
	for i := range 300 {
		c.do("CF.ADD", key, fmt.Sprint(i))
	}
}

// filledCFServer starts a server with cfg, with chunks of 300 bytes
// (withDumpChunk), and creates the filter "k" on it with filledCF.
func filledCFServer(t *testing.T, cfg Config, opts ...string) (*Server, *conn) {
	t.Helper()
	withDumpChunk(t, 300)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	filledCF(c, "k", opts...)
	return s, c
}

// TestDumpRoundTrip dumps filters of every kind in several chunks and
// loads them into new keys: each copy dumps to the same bytes (an equal
// filter) and holds every item.
func TestDumpRoundTrip(t *testing.T) {
	testlong.SkipQuickRun(t)
	withDumpChunk(t, 1000)
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
	withDumpChunk(t, 500)
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
	_, c := filledCFServer(t, testConfig(t))
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
	_, addr := startServer(t, cfg)
	if got := dial(t, addr).do("CF.LOADCHUNK", "copy3", iters[0], chunks[0]); got != "-ERR dump larger than the server accepts\r\n" {
		t.Fatalf("a dump past MaxFilterBytes: %q", got)
	}
}

// TestLoadChunkLogsChunks: a filter loaded with LOADCHUNK goes to the log
// in chunks of SCANDUMP's size (a dump of many GB in one record would be
// past what a recovery reads), and a restart from the log alone gives
// back the same filter.
func TestLoadChunkLogsChunks(t *testing.T) {
	withDumpChunk(t, 1000)
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
	s, c := filledCFServer(t, testConfig(t))
	iters, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "k")
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

// TestPendingLoadCountsInInfo: the chunks of a LOADCHUNK load begun and
// not finished are counted, as long as the server holds them, in INFO
// memory (loadchunk_pending, mem_loadchunk_pending) and in
// used_memory_dataset; the last chunk, and DEL of the key, give them back.
func TestPendingLoadCountsInInfo(t *testing.T) {
	_, c := filledCFServer(t, testConfig(t))
	iters, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "k")
	if len(chunks) < 3 {
		t.Fatalf("%d chunks, want 3 or more", len(chunks))
	}
	pending := func() (n, bytes int64) {
		return infoField(t, c, "loadchunk_pending"), infoField(t, c, "mem_loadchunk_pending")
	}
	if n, b := pending(); n != 0 || b != 0 {
		t.Fatalf("before any load: %d pending of %d bytes", n, b)
	}
	dataset := infoField(t, c, "used_memory_dataset")
	held := int64(0)
	for _, dst := range []string{"dst", "other"} {
		for i := range 2 {
			if got := c.do("CF.LOADCHUNK", dst, iters[i], chunks[i]); got != "+OK\r\n" {
				t.Fatalf("LOADCHUNK %s chunk %d: %q", dst, i, got)
			}
			held += int64(len(chunks[i]))
		}
	}
	if n, b := pending(); n != 2 || b != held {
		t.Fatalf("two loads of two chunks begun: %d pending of %d bytes, want 2 of %d", n, b, held)
	}
	if got := infoField(t, c, "used_memory_dataset") - dataset; got != held {
		t.Fatalf("used_memory_dataset grew by %d with the loads begun, want %d", got, held)
	}
	for i := 2; i < len(chunks); i++ {
		if got := c.do("CF.LOADCHUNK", "dst", iters[i], chunks[i]); got != "+OK\r\n" {
			t.Fatalf("LOADCHUNK dst chunk %d: %q", i, got)
		}
	}
	if n, b := pending(); n != 1 || b != int64(len(chunks[0])+len(chunks[1])) {
		t.Fatalf("one load ended: %d pending of %d bytes, want 1 of %d", n, b, len(chunks[0])+len(chunks[1]))
	}
	c.do("DEL", "other")
	if n, b := pending(); n != 0 || b != 0 {
		t.Fatalf("the other load abandoned (DEL): %d pending of %d bytes", n, b)
	}
}

// dumpGoneReply is the reply to a SCANDUMP that continues a dump whose copy
// the server no longer holds.
const dumpGoneReply = "-ERR no dump of this key in progress at this iterator (it ended, the key was deleted or overwritten, the server restarted, or its copy was dropped: under maxmemory, or unused for 5 minutes): start again from iterator 0\r\n"

// short cuts a reply holding a chunk to its start, for a message.
func short(reply string) string { return reply[:min(len(reply), 40)] }

// dumpCopyFields returns INFO memory's count of the dump copies the
// server holds and their bytes.
func dumpCopyFields(t *testing.T, c *conn) (copies, bytes int64) {
	t.Helper()
	return infoField(t, c, "scandump_copies"), infoField(t, c, "mem_scandump_copies")
}

// TestDumpCopyCountsInInfoAndDataset: the copy SCANDUMP key 0 takes is
// counted, as long as the server holds it, in INFO memory
// (scandump_copies, mem_scandump_copies) and in used_memory_dataset,
// which maxmemory counts; the end of the dump gives it back.
func TestDumpCopyCountsInInfoAndDataset(t *testing.T) {
	_, c := filledCFServer(t, testConfig(t))
	_, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "k")
	total := int64(len(strings.Join(chunks, "")))
	if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
		t.Fatalf("after a whole dump: %d copies of %d bytes, want none", n, b)
	}
	dataset := infoField(t, c, "used_memory_dataset")
	c.do("CF.SCANDUMP", "k", "0")
	if n, b := dumpCopyFields(t, c); n != 1 || b != total {
		t.Fatalf("a dump begun: %d copies of %d bytes, want 1 of %d", n, b, total)
	}
	if got := infoField(t, c, "used_memory_dataset") - dataset; got != total {
		t.Fatalf("used_memory_dataset grew by %d with a dump begun, want %d", got, total)
	}
	c.do("CF.SCANDUMP", "k", "0") // a new dump of the key replaces the copy
	if n, b := dumpCopyFields(t, c); n != 1 || b != total {
		t.Fatalf("a dump begun again: %d copies of %d bytes, want 1 of %d", n, b, total)
	}
	scanDumpAll(t, c, "CF.SCANDUMP", "k")
	if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
		t.Fatalf("after the dump ended: %d copies of %d bytes", n, b)
	}
	if got := infoField(t, c, "used_memory_dataset"); got != dataset {
		t.Fatalf("used_memory_dataset %d after the dump ended, %d before it", got, dataset)
	}
}

// TestDeleteDropsDumpCopy: DEL, UNLINK, FLUSHALL and a RENAME onto the key
// free the copy of a dump in progress of the key, and the dump cannot go
// on: its next SCANDUMP gets "not found", or, once a new key of that name
// exists, the error telling the client to start again from iterator 0
// (never a chunk of the new key's encoding).
func TestDeleteDropsDumpCopy(t *testing.T) {
	withDumpChunk(t, 300)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	fill := func(key string) {
		c.do("BF.RESERVE", key, "0.01", "1000")
		for i := range 300 {
			c.do("BF.ADD", key, fmt.Sprint(key, i))
		}
	}
	for _, del := range [][]string{{"DEL", "k"}, {"UNLINK", "k"}, {"FLUSHALL"}, {"RENAME", "other", "k"}} {
		t.Run(del[0], func(t *testing.T) {
			fill("k")
			fill("other")
			first := c.do("BF.SCANDUMP", "k", "0")
			it := strings.Split(first, "\r\n")[1][1:]
			if n, _ := dumpCopyFields(t, c); n != 1 {
				t.Fatalf("%d copies with a dump begun", n)
			}
			if got := c.do(del...); strings.HasPrefix(got, "-") {
				t.Fatalf("%q: %q", del, got)
			}
			if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
				t.Fatalf("after %q: %d copies of %d bytes held", del, n, b)
			}
			if del[0] != "RENAME" {
				if got := c.do("BF.SCANDUMP", "k", it); got != "-ERR not found\r\n" {
					t.Fatalf("a dump of a deleted key went on: %q", short(got))
				}
				fill("k")
			}
			if got := c.do("BF.SCANDUMP", "k", it); got != dumpGoneReply {
				t.Fatalf("a dump continued on a new key of the name: %q", short(got))
			}
			c.do("FLUSHALL")
		})
	}
}

// TestDumpContinuationNeedsItsCopy: a SCANDUMP at an iterator other than 0
// is served only from the copy taken at iterator 0, never from a new
// encoding of the filter as it is now: chunks of two encodings stitched
// together are a dump that loads wrong or not at all. Without its copy
// (the dump ended, or the server restarted) the continuation is refused
// with an error telling the client to start again from 0.
func TestDumpContinuationNeedsItsCopy(t *testing.T) {
	cfg := testConfig(t)
	s, c := filledCFServer(t, cfg, "EXPANSION", "0")
	iters, _ := scanDumpAll(t, c, "CF.SCANDUMP", "k")
	if len(iters) < 2 {
		t.Fatalf("%d chunks", len(iters))
	}
	// The dump ended (its last reply was [0, nil]): asking for its chunks
	// again needs a new dump.
	if got := c.do("CF.SCANDUMP", "k", iters[0]); got != dumpGoneReply {
		t.Fatalf("a chunk after the dump ended: %q", short(got))
	}
	// A dump begun, the filter changed, the server restarted: the copy is
	// gone, and the next chunk must not come from the filter as it is now.
	c.do("CF.SCANDUMP", "k", "0")
	for i := range 50 {
		c.do("CF.ADD", "k", fmt.Sprint("late", i))
	}
	s.Close()
	_, addr := startServer(t, cfg)
	c = dial(t, addr)
	if got := c.do("CF.SCANDUMP", "k", iters[0]); got != dumpGoneReply {
		t.Fatalf("a dump continued after a restart: %q", short(got))
	}
	// Starting again works.
	if _, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "k"); len(chunks) != len(iters) {
		t.Fatalf("the new dump has %d chunks, want %d", len(chunks), len(iters))
	}
}

// Two dumps of one key at once: the later SCANDUMP key 0 takes the key's
// copy, and the earlier dump's next chunk is refused (start again), never
// cut from the later dump's encoding; the later dump ends whole.
func TestDumpOverlappedByAnotherOfItsKeyStartsAgain(t *testing.T) {
	_, c := filledCFServer(t, testConfig(t), "EXPANSION", "0")
	first, _ := scanDumpStep(t, c, "CF.SCANDUMP", "k", "0")
	for i := range 50 {
		c.do("CF.ADD", "k", fmt.Sprint("between", i))
	}
	second, chunk := scanDumpStep(t, c, "CF.SCANDUMP", "k", "0")
	if got := c.do("CF.SCANDUMP", "k", first); got != dumpGoneReply {
		t.Fatalf("the first dump went on after a second began: %q", short(got))
	}
	iters, chunks := scanDumpFrom(t, c, "CF.SCANDUMP", "k", second)
	_, addr := startServer(t, testConfig(t))
	load := dial(t, addr)
	iters, chunks = append([]string{second}, iters...), append([]string{chunk}, chunks...)
	for i := range chunks {
		if got := load.do("CF.LOADCHUNK", "k", iters[i], chunks[i]); got != "+OK\r\n" {
			t.Fatalf("LOADCHUNK of chunk %d: %q", i, short(got))
		}
	}
	if got := load.do("CF.EXISTS", "k", "between49"); got != ":1\r\n" {
		t.Fatalf("the loaded filter lacks a key added before its dump: %q", got)
	}
}

// dumpSizes returns the memory a filter created by reserve counts, and the
// length of its encoding (the copy a dump of it holds), measured on a
// server of its own.
func dumpSizes(t *testing.T, reserve ...string) (size, enc int64) {
	t.Helper()
	s, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	before := s.ks.used.Load()
	if got := c.do(reserve...); got != "+OK\r\n" {
		t.Fatalf("%q: %q", reserve, got)
	}
	size = s.ks.used.Load() - before
	_, chunks := scanDumpAll(t, c, strings.Replace(reserve[0], "RESERVE", "SCANDUMP", 1), reserve[1])
	return size, int64(len(strings.Join(chunks, "")))
}

// TestMaxMemoryDropsDumpCopiesBeforeRefusingWrites: under maxmemory, a
// write that would be refused only because of the copies of dumps in
// progress drops them, least recently continued first, until it fits, and
// runs; a dump whose copy was dropped answers its next SCANDUMP with the
// error to start again from iterator 0, and one whose copy was kept ends
// and loads as before. A write that would be refused even without the
// copies leaves them alone. A new SCANDUMP 0 whose copy would pass
// maxmemory gets the OOM error.
func TestMaxMemoryDropsDumpCopiesBeforeRefusingWrites(t *testing.T) {
	withDumpChunk(t, 4096)
	size, enc := dumpSizes(t, "CF.RESERVE", "x", "200000", "EXPANSION", "0")
	if enc < 2*maxDumpChunk || enc > size+size/4 {
		t.Fatalf("a filter of %d bytes encodes to %d", size, enc)
	}
	// Two filters and two copies fit; a third filter fits beside one copy
	// only; four filters leave no room for a copy.
	cfg := testConfig(t)
	cfg.MaxMemory = 3*size + enc + enc/2
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	const oom = "-OOM command not allowed when used memory > 'maxmemory'."
	for _, k := range []string{"a", "b"} {
		if got := c.do("CF.RESERVE", k, "200000", "EXPANSION", "0"); got != "+OK\r\n" {
			t.Fatal(got)
		}
		for i := range 2000 {
			c.do("CF.ADD", k, fmt.Sprint(k, i))
		}
	}
	itA, chunkA := scanDumpStep(t, c, "CF.SCANDUMP", "a", "0")
	itB, _ := scanDumpStep(t, c, "CF.SCANDUMP", "b", "0")
	// a is continued after b began: b is the least recently continued.
	itA, chunkA2 := scanDumpStep(t, c, "CF.SCANDUMP", "a", itA)
	if n, b := dumpCopyFields(t, c); n != 2 || b != 2*enc {
		t.Fatalf("%d copies of %d bytes, want 2 of %d", n, b, 2*enc)
	}

	// A filter larger than maxmemory even without the copies: refused,
	// and the copies stay.
	if got := c.do("CF.RESERVE", "huge", "10000000"); got != oom+"\r\n" {
		t.Fatalf("a filter past maxmemory: %q", got)
	}
	if n, _ := dumpCopyFields(t, c); n != 2 {
		t.Fatalf("a refused write dropped copies: %d left", n)
	}
	// A third filter fits once one copy is gone: b's, the least recently
	// continued.
	if got := c.do("CF.RESERVE", "c", "200000", "EXPANSION", "0"); got != "+OK\r\n" {
		t.Fatalf("a write that fits once a dump copy is dropped: %q", got)
	}
	if n, b := dumpCopyFields(t, c); n != 1 || b != enc {
		t.Fatalf("%d copies of %d bytes left, want 1 of %d", n, b, enc)
	}
	if got := c.do("CF.SCANDUMP", "b", itB); got != dumpGoneReply {
		t.Fatalf("the dump whose copy was dropped went on: %q", short(got))
	}
	// a's dump ends from its copy: the same bytes as a new dump of the
	// unchanged filter, once there is room for one.
	_, rest := scanDumpFrom(t, c, "CF.SCANDUMP", "a", itA)
	whole := chunkA + chunkA2 + strings.Join(rest, "")
	if int64(len(whole)) != enc {
		t.Fatalf("a's dump is %d bytes, want %d", len(whole), enc)
	}
	c.do("DEL", "c")
	_, again := scanDumpAll(t, c, "CF.SCANDUMP", "a")
	if strings.Join(again, "") != whole {
		t.Fatal("the dump kept through the drop differs from a new dump of the unchanged filter")
	}
	// With four filters there is no room for a copy: SCANDUMP 0 is
	// refused, and nothing is held.
	for _, k := range []string{"c", "d"} {
		if got := c.do("CF.RESERVE", k, "200000", "EXPANSION", "0"); got != "+OK\r\n" {
			t.Fatalf("filter %s: %q", k, got)
		}
	}
	if got := c.do("CF.SCANDUMP", "b", "0"); got != oom+"\r\n" {
		t.Fatalf("a dump whose copy would pass maxmemory: %q", short(got))
	}
	if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
		t.Fatalf("a refused dump holds %d copies of %d bytes", n, b)
	}
	if s.ks.used.Load() > cfg.MaxMemory {
		t.Fatalf("%d bytes counted, past maxmemory %d", s.ks.used.Load(), cfg.MaxMemory)
	}
}

// TestDumpCopiesUnderConcurrentWrites: clients dumping keys (one client a
// key: two dumps of one key at once share its copy, see dump.go) while
// others write to them, delete and recreate them, and create filters past
// maxmemory, which drops copies: every dump either ends in chunks of one
// encoding (they decode, checksum and all) or is cut short by a reply
// the client can act on (not found, the error to start again, OOM); and
// once the keys are gone nothing is counted any more.
func TestDumpCopiesUnderConcurrentWrites(t *testing.T) {
	withDumpChunk(t, 16<<10)
	reserve := []string{"CF.RESERVE", "", "100000", "EXPANSION", "0"}
	size, _ := dumpSizes(t, append([]string{reserve[0], "x"}, reserve[2:]...)...)
	cfg := testConfig(t)
	cfg.MaxMemory = 8 * size // the six filters the clients create and about two copies
	s, addr := startServer(t, cfg)
	keys := []string{"k0", "k1", "k2", "k3"}
	c := dial(t, addr)
	for _, k := range keys {
		reserve[1] = k
		if got := c.do(reserve...); got != "+OK\r\n" {
			t.Fatal(got)
		}
	}
	do := func(c *conn, args ...string) (string, error) {
		if _, err := c.nc.Write(encode(args...)); err != nil {
			return "", err
		}
		return c.reply()
	}
	// dump dumps key to its end and returns the encoding, or "" with the
	// reply that cut it short.
	dump := func(c *conn, key string) (string, string, error) {
		var enc strings.Builder
		it := "0"
		for {
			raw, err := do(c, "CF.SCANDUMP", key, it)
			if err != nil {
				return "", "", err
			}
			rest, ok := strings.CutPrefix(raw, "*2\r\n:")
			if !ok {
				return "", raw, nil
			}
			next, rest, _ := strings.Cut(rest, "\r\n")
			if next == "0" {
				return enc.String(), "", nil
			}
			body := rest[strings.Index(rest, "\r\n")+2 : len(rest)-2]
			enc.WriteString(body)
			it = next
		}
	}
	const rounds = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{} // logged: how the dumps went varies from run to run
	errs := make(chan error, 16)
	for i := range 4 {
		dc := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := keys[i]
			for r := range rounds {
				enc, cut, err := dump(dc, key)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				outcomes[strings.TrimSpace(short(cut))]++
				mu.Unlock()
				switch cut {
				case "":
					if _, err := decodeObject([]byte(enc), kindCF); err != nil {
						errs <- fmt.Errorf("dump %d of %s does not decode: %v", r, key, err)
						return
					}
				case "-ERR not found\r\n", dumpGoneReply, "-OOM command not allowed when used memory > 'maxmemory'.\r\n":
				default:
					errs <- fmt.Errorf("dump %d of %s: %q", r, key, short(cut))
					return
				}
			}
		}()
	}
	for i := range 2 {
		wc := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				key := keys[(i+r)%len(keys)]
				cmds := [][]string{{"CF.ADD", key, fmt.Sprint(i, "-", r)}, {"DEL", key}, {"CF.RESERVE", key, "100000", "EXPANSION", "0"},
					{"CF.ADD", key, fmt.Sprint(i, "+", r)}, {"CF.RESERVE", fmt.Sprint("p", i), "100000", "EXPANSION", "0"}, {"DEL", fmt.Sprint("p", i)}}
				for _, args := range cmds {
					if _, err := do(wc, args...); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("dumps by how they ended (\"\": whole): %v", outcomes)
	// Alone, each dump ends.
	for _, k := range keys {
		// Made again: a writer's DEL may have been last, or its CF.ADD may
		// have made the key, small, after its CF.RESERVE was refused for
		// memory.
		c.do("DEL", k)
		if got := c.do("CF.RESERVE", k, "100000", "EXPANSION", "0"); got != "+OK\r\n" {
			t.Fatalf("CF.RESERVE %s: %q", k, got)
		}
		if _, chunks := scanDumpAll(t, c, "CF.SCANDUMP", k); len(chunks) < 2 {
			t.Fatalf("%s: %d chunks", k, len(chunks))
		}
	}
	// Dumps left unfinished, then every key deleted: nothing is counted.
	for _, k := range keys {
		c.do("CF.SCANDUMP", k, "0")
	}
	if n, _ := dumpCopyFields(t, c); n == 0 {
		t.Fatal("no copy held with dumps unfinished")
	}
	c.do("FLUSHALL")
	if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
		t.Fatalf("after FLUSHALL: %d copies of %d bytes", n, b)
	}
	if used := s.ks.used.Load(); used != 0 {
		t.Fatalf("after FLUSHALL %d bytes are counted", used)
	}
}

// fakeClock makes cfg's server read the time of the dumps' copies from the
// clock returned, which stands still until the test moves it.
func fakeClock(cfg *Config) *atomic.Int64 {
	clock := new(atomic.Int64)
	clock.Store(int64(1000 * time.Hour))
	cfg.now = clock.Load
	return clock
}

// TestIdleDumpCopyIsDropped: a dump's copy that no SCANDUMP has used for
// dumpIdle is dropped, one used since is kept; the dump whose copy was
// dropped gets the error to start again, never a chunk of a new encoding,
// and the dump whose copy was kept ends with the chunks of one encoding.
func TestIdleDumpCopyIsDropped(t *testing.T) {
	cfg := testConfig(t)
	clock := fakeClock(&cfg)
	s, c := filledCFServer(t, cfg, "EXPANSION", "0")
	filledCF(c, "j", "EXPANSION", "0")
	_, whole := scanDumpAll(t, c, "CF.SCANDUMP", "j")
	if len(whole) < 3 {
		t.Fatalf("%d chunks, want 3 or more", len(whole))
	}
	enc := int64(len(strings.Join(whole, "")))

	itK, _ := scanDumpStep(t, c, "CF.SCANDUMP", "k", "0")
	itJ, chunkJ := scanDumpStep(t, c, "CF.SCANDUMP", "j", "0")
	clock.Add(int64(dumpIdle - time.Minute))
	itJ, chunkJ2 := scanDumpStep(t, c, "CF.SCANDUMP", "j", itJ) // j's copy used again
	clock.Add(int64(time.Minute) - 1)
	s.ks.dropIdleDumps()
	if n, b := dumpCopyFields(t, c); n != 2 || b != 2*enc {
		t.Fatalf("copies unused for less than %v dropped: %d left of %d bytes, want 2 of %d", dumpIdle, n, b, 2*enc)
	}
	clock.Add(1)
	s.ks.dropIdleDumps()
	if n, b := dumpCopyFields(t, c); n != 1 || b != enc {
		t.Fatalf("k's copy unused for %v: %d copies of %d bytes left, want 1 of %d (j's)", dumpIdle, n, b, enc)
	}
	for i := range 20 { // k changes: a new encoding would differ
		c.do("CF.ADD", "k", fmt.Sprint("late", i))
	}
	if got := c.do("CF.SCANDUMP", "k", itK); got != dumpGoneReply {
		t.Fatalf("a dump whose copy was dropped went on: %q", short(got))
	}
	_, rest := scanDumpFrom(t, c, "CF.SCANDUMP", "j", itJ)
	if got := chunkJ + chunkJ2 + strings.Join(rest, ""); got != strings.Join(whole, "") {
		t.Fatal("the dump whose copy was kept differs from a whole dump of the unchanged filter")
	}
	if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
		t.Fatalf("after the kept dump ended: %d copies of %d bytes", n, b)
	}
	if _, chunks := scanDumpAll(t, c, "CF.SCANDUMP", "k"); len(chunks) == 0 {
		t.Fatal("k's dump begun again has no chunks")
	}
}

// TestServerDropsIdleDumpCopies: the server itself drops the copies
// unused for dumpIdle, a cuckoo filter's and a Bloom filter's (its
// background task, once a second), without any command.
func TestServerDropsIdleDumpCopies(t *testing.T) {
	parallel(t) // dumps of one chunk: maxDumpChunk as it is
	cfg := testConfig(t)
	clock := fakeClock(&cfg)
	_, addr := startServer(t, cfg)
	c := dial(t, addr)
	filledCF(c, "k")
	c.do("BF.RESERVE", "b", "0.01", "1000")
	for i := range 300 {
		c.do("BF.ADD", "b", fmt.Sprint(i))
	}
	itK, _ := scanDumpStep(t, c, "CF.SCANDUMP", "k", "0")
	itB, _ := scanDumpStep(t, c, "BF.SCANDUMP", "b", "0")
	if n, _ := dumpCopyFields(t, c); n != 2 {
		t.Fatalf("%d copies with two dumps begun", n)
	}
	clock.Add(int64(dumpIdle))
	waitFor(t, "the idle copies to be dropped", func() bool {
		n, _ := dumpCopyFields(t, c)
		return n == 0
	})
	if n, b := dumpCopyFields(t, c); n != 0 || b != 0 {
		t.Fatalf("%d copies of %d bytes left", n, b)
	}
	if got := c.do("CF.SCANDUMP", "k", itK); got != dumpGoneReply {
		t.Fatalf("a dump whose copy was dropped went on: %q", short(got))
	}
	if got := c.do("BF.SCANDUMP", "b", itB); got != dumpGoneReply {
		t.Fatalf("a Bloom filter's dump whose copy was dropped went on: %q", short(got))
	}
}
