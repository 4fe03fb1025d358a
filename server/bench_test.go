package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/dedupkit/cuckoo/server/resp"
)

// execServer returns a server with a cuckoo filter "cf" of capacity n
// holding n/2 items, for running commands in-process; with persist, it
// has a data directory and its log.
func execServer(tb testing.TB, n int, persist bool) (*Server, *client) {
	cfg := DefaultConfig()
	cfg.Dir = ""
	if persist {
		cfg.Dir = tb.TempDir()
		cfg.SaveInterval = 0
	}
	s, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	cl := &client{s: s, authed: true, w: resp.NewWriter(io.Discard, 0)}
	run := func(args ...string) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		s.exec(&cl.call, cl, cl.w, b)
	}
	run("CF.RESERVE", "cf", fmt.Sprint(n))
	run("BF.RESERVE", "bf", "0.01", fmt.Sprint(n+1))
	for i := range n / 2 {
		run("CF.ADD", "cf", fmt.Sprint(i))
	}
	return s, cl
}

// TestExecAllocs: running CF.ADD, CF.EXISTS and BF.EXISTS on an existing
// key allocates nothing, log record and reply included.
func TestExecAllocs(t *testing.T) {
	s, cl := execServer(t, 1000, true)
	for _, cmd := range [][][]byte{
		{[]byte("CF.EXISTS"), []byte("cf"), []byte("17")},
		{[]byte("CF.ADD"), []byte("cf"), []byte("17")},
		{[]byte("CF.MEXISTS"), []byte("cf"), []byte("1"), []byte("2")},
		{[]byte("PING")},
		{[]byte("BF.ADD"), []byte("bf"), []byte("x")},
		{[]byte("BF.EXISTS"), []byte("bf"), []byte("x")},
	} {
		allocs := testing.AllocsPerRun(200, func() {
			s.exec(&cl.call, cl, cl.w, cmd)
			s.aof.sync()
			cl.w.Flush()
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per command, want 0", cmd[0], allocs)
		}
	}
}

// BenchmarkExec runs commands in-process, without the network: the cost
// of parsing, locking, the filter and the reply.
func BenchmarkExec(b *testing.B) {
	for _, name := range []string{"CF.EXISTS", "CF.ADD"} {
		b.Run("cmd="+name, func(b *testing.B) {
			s, cl := execServer(b, 1_000_000, false)
			keys := make([][]byte, 4096)
			for i := range keys {
				keys[i] = []byte(fmt.Sprint("key", i))
			}
			args := [][]byte{[]byte(name), []byte("cf"), nil}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				args[2] = keys[i&4095]
				s.exec(&cl.call, cl, cl.w, args)
				cl.w.Flush()
				i++
			}
		})
	}
}

// BenchmarkObjectEncode measures the copy a snapshot makes of one filter:
// the longest a write to that key waits while a snapshot runs.
func BenchmarkObjectEncode(b *testing.B) {
	for _, n := range []int{1_000_000, 10_000_000} {
		b.Run(fmt.Sprintf("n=%dM", n/1_000_000), func(b *testing.B) {
			s, _ := execServer(b, 0, false)
			fs := DefaultFilterSettings()
			p := defaultCFParams(&fs, uint64(n))
			p.expansion = 0
			o, err := p.newObject(&call{s: s})
			if err != nil {
				b.Fatal(err)
			}
			for i := range n {
				o.cf.add([]byte(fmt.Sprint(i)))
			}
			enc, _ := o.encode()
			b.SetBytes(int64(len(enc)))
			for b.Loop() {
				if _, err := o.encode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServer sends CF.EXISTS over loopback from one client,
// unpipelined and in pipelines of 16.
func BenchmarkServer(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Dir = ""
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	nc.Write(encode("CF.RESERVE", "cf", "1000000"))
	br.ReadString('\n')
	for _, pipe := range []int{1, 16} {
		b.Run(fmt.Sprintf("cmd=CF.EXISTS/pipeline=%d", pipe), func(b *testing.B) {
			var req []byte
			for i := range pipe {
				req = append(req, encode("CF.EXISTS", "cf", fmt.Sprint(i))...)
			}
			for b.Loop() {
				nc.Write(req)
				for range pipe {
					if _, err := br.ReadString('\n'); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.N*pipe)/b.Elapsed().Seconds(), "cmds/s")
		})
	}
}

// repeatReader returns p on every Read: a connection that always has the
// same pipeline waiting.
type repeatReader struct{ p []byte }

func (r repeatReader) Read(b []byte) (int, error) { return copy(b, r.p), nil }

// BenchmarkCommandStats runs pipelines of 16 commands through a client's
// batch loop (runBuffered), as an event loop does after a read, without
// and with the command statistics (Config.CommandStats, which `cuckoo
// serve --metrics` turns on): their cost per command, without the
// network's noise. On Linux it also reports the thread's CPU time per
// command (cpu-ns/cmd), which other jobs on the machine disturb less than
// the wall clock.
func BenchmarkCommandStats(b *testing.B) {
	for _, name := range []string{"CF.EXISTS", "CF.ADD"} {
		for _, stats := range []bool{false, true} {
			b.Run(fmt.Sprintf("cmd=%s/stats=%v", name, stats), func(b *testing.B) {
				s, _ := execServer(b, 1_000_000, false)
				var pipeline []byte
				for i := range 16 {
					pipeline = append(pipeline, encode(name, "cf", fmt.Sprint("key", i))...)
				}
				cl := &client{s: s, authed: true, w: resp.NewWriter(io.Discard, 0)}
				cl.rd = resp.NewReader(repeatReader{pipeline}, resp.Limits{})
				if stats {
					cl.cmdStats, cl.sample = newCommandStats(), newCommandSample(1)
				}
				b.ReportAllocs()
				runtime.GC() // the setup's garbage, collected now rather than while measured
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu := threadCPU()
				for b.Loop() {
					if err := cl.rd.Fill(); err != nil {
						b.Fatal(err)
					}
					if !cl.runBuffered() {
						b.Fatal("the batch failed")
					}
					cl.w.Flush()
				}
				if cpu > 0 {
					b.ReportMetric(float64(threadCPU()-cpu)/float64(b.N*16), "cpu-ns/cmd")
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*16), "ns/cmd")
			})
		}
	}
}
