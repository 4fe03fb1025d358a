package main

import (
	"bufio"
	byteorder "encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

// The format of the server's log records (server/aof.go): a first word
// holding the length and, in its top bit, the mark of format 2, then the
// body's and the header's CRC-32C.
const (
	logRecordHeader = 12
	logFormat2      = 1 << 31
)

// killedServerLog runs `cuckoo serve` on dir/data, sends it cmds (each an
// inline command line, pipelined) and checks each reply, kills it with
// SIGKILL, and returns its log file's name and bytes, and the offsets of
// its records.
func killedServerLog(t *testing.T, dir string, cmds []string) (string, []byte, []int) {
	t.Helper()
	cmd, line, stderr := startServe(t, dir, "--port", "0", "--dir", "data")
	m := listenLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q", line)
	}
	nc, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	go nc.Write([]byte(strings.Join(cmds, "\r\n") + "\r\n"))
	nc.SetReadDeadline(time.Now().Add(60 * time.Second)) // a server that never answers
	br := bufio.NewReader(nc)
	for _, c := range cmds {
		reply, err := br.ReadString('\n')
		if err != nil || strings.HasPrefix(reply, "-") {
			t.Fatalf("%s: %q, %v\n%s", c, reply, err, stderr)
		}
	}
	// Every write above was acknowledged: a kill loses none of them.
	cmd.Process.Kill()
	cmd.Wait()
	logs, _ := filepath.Glob(filepath.Join(dir, "data", "appendonly.*.log"))
	if len(logs) != 1 {
		t.Fatalf("log files %q, want one", logs)
	}
	data, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int
	for off := 0; off < len(data); {
		w := byteorder.LittleEndian.Uint32(data[off:])
		if w&logFormat2 == 0 || off+logRecordHeader+int(w&^logFormat2) > len(data) {
			t.Fatalf("the record at byte %d of the log is not whole and of format 2", off)
		}
		offsets = append(offsets, off)
		off += logRecordHeader + int(w&^logFormat2)
	}
	return filepath.Base(logs[0]), data, offsets
}

var damagedLine = regexp.MustCompile(`^cuckoo serve: data directory data: (appendonly\.\d+\.log) is damaged at byte (\d+) \([^)]+\); start with --repair to keep the log up to that point \(what follows it is lost\); see docs/server\.md, Recovery\n$`)

// flipOutcome restarts `cuckoo serve` on a copy of the killed server's
// directory whose log has bit of byte i flipped. It reports true when the
// server refused to start, with status 3 and the damage error naming the
// record at byte want, and false when it started holding every write (each
// of items is in k; it is then killed); any other outcome is an error.
func flipOutcome(dir, name string, data []byte, i, bit, want int, items []string) (bool, error) {
	trial := filepath.Join(dir, fmt.Sprintf("flip-%d-%d", i, bit))
	defer os.RemoveAll(trial)
	if err := os.MkdirAll(filepath.Join(trial, "data"), 0o755); err != nil {
		return false, err
	}
	damaged := append([]byte(nil), data...)
	damaged[i] ^= 1 << bit
	if err := os.WriteFile(filepath.Join(trial, "data", name), damaged, 0o640); err != nil {
		return false, err
	}
	cmd := exec.Command(binary, "serve", "--port", "0", "--dir", "data")
	cmd.Dir = trial
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return false, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil { // no listening line: it stopped
		err := cmd.Wait()
		code := cmd.ProcessState.ExitCode()
		m := damagedLine.FindStringSubmatch(stderr.String())
		if code != exitData || m == nil || m[1] != name || m[2] != fmt.Sprint(want) {
			return false, fmt.Errorf("bit %d of byte %d: status %d (%v), %q; want status %d and the damage at byte %d", bit, i, code, err, stderr.String(), exitData, want)
		}
		return true, nil
	}
	m := listenLine.FindStringSubmatch(line)
	if m == nil {
		return false, fmt.Errorf("bit %d of byte %d: first line %q", bit, i, line)
	}
	nc, err := net.Dial("tcp", m[1])
	if err != nil {
		return false, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(60 * time.Second)) // a server that never answers
	br := bufio.NewReader(nc)
	for _, item := range items {
		fmt.Fprintf(nc, "CF.EXISTS k %s\r\n", item)
		if reply, err := br.ReadString('\n'); reply != ":1\r\n" {
			return false, fmt.Errorf("bit %d of byte %d: the server started without %q: %q, %v\n%s", bit, i, item, reply, err, stderr.String())
		}
	}
	return false, nil
}

// TestServeRefusesFlippedLog: a server killed with SIGKILL after 100
// acknowledged CF.ADDs, whose log then has one bit flipped, either
// refuses to start, with status 3 and a line naming the damaged record,
// or starts with every acknowledged write. The flips are those of the
// report that found a length's flip taken for a torn end (bit 2 of the
// second record's length), and a sample of every part of a record: its
// length, both checksums and its body, in the first, the second, a middle
// and the last record. TestLogBitFlipsNeverLoseWrites (server) tries every
// bit in-process; TestServeRefusesEveryFlip every bit through the command.
func TestServeRefusesFlippedLog(t *testing.T) {
	testlong.SkipQuickRun(t)
	t.Parallel()
	dir := t.TempDir()
	cmds := []string{"CF.RESERVE k 1000"}
	var items []string
	for i := range 100 {
		items = append(items, fmt.Sprint("item-", i))
		cmds = append(cmds, "CF.ADD k "+items[i])
	}
	name, data, offsets := killedServerLog(t, dir, cmds)
	type flip struct{ rec, byteInRec, bit int }
	flips := []flip{{1, 0, 2}} // the report's
	for _, rec := range []int{0, 1, len(offsets) / 2, len(offsets) - 1} {
		end := len(data)
		if rec+1 < len(offsets) {
			end = offsets[rec+1]
		}
		size := end - offsets[rec]
		flips = append(flips,
			flip{rec, 0, 0}, flip{rec, 1, 3}, flip{rec, 3, 7}, // the length, and the mark of format 2
			flip{rec, 5, 1},               // the body's checksum
			flip{rec, 10, 6},              // the header's checksum
			flip{rec, logRecordHeader, 0}, // the body: its epoch,
			flip{rec, size - 1, 3})        // its last byte
	}
	for _, f := range flips {
		i := offsets[f.rec] + f.byteInRec
		refused, err := flipOutcome(dir, name, data, i, f.bit, offsets[f.rec], items)
		if err != nil {
			t.Fatal(err)
		}
		if !refused {
			t.Logf("bit %d of byte %d: the server started with every write", f.bit, i)
		}
	}
}

// TestServeRefusesEveryFlip flips every bit of every record of a killed
// server's small log, one at a time, and starts `cuckoo serve` on each
// (a long check: about 3,400 starts): each refuses to start with status 3
// naming the damaged record, or starts with every acknowledged write.
func TestServeRefusesEveryFlip(t *testing.T) {
	testlong.Skip(t)
	t.Parallel()
	dir := t.TempDir()
	items := []string{"a", "b"}
	name, data, offsets := killedServerLog(t, dir, []string{"CF.RESERVE k 100", "CF.ADD k a", "CF.ADD k b", "BF.ADD bf x"})
	var mu sync.Mutex
	refused, whole := 0, 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	rec := 0
	for i := range data {
		for rec+1 < len(offsets) && i >= offsets[rec+1] {
			rec++
		}
		for bit := range 8 {
			wg.Add(1)
			sem <- struct{}{}
			go func(i, bit, start int) {
				defer func() { <-sem; wg.Done() }()
				ok, err := flipOutcome(dir, name, data, i, bit, start, items)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					t.Error(err)
				case ok:
					refused++
				default:
					whole++
				}
			}(i, bit, offsets[rec])
		}
	}
	wg.Wait()
	t.Logf("%d single-bit flips of a log of %d bytes in %d records: %d refused with status 3, %d started with every write",
		8*len(data), len(data), len(offsets), refused, whole)
}
