package server

import (
	"flag"
	"fmt"
	"testing"

	"github.com/dedupkit/cuckoo/internal/testseed"
)

var modelOps = flag.Int("model.ops", 4000, "operations of TestModel")

// TestModel applies random commands to the server and to a model (a map of
// multisets for cuckoo keys, of sets for Bloom keys), with snapshots and
// restarts (graceful, and abrupt) among them, and checks after every
// command what a filter promises: no false negatives, counts never below
// the model's, the key space the model's. Replay with -seed.
func TestModel(t *testing.T) {
	parallel(t)
	rng := testseed.Rand(t)
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	c := dial(t, addr)
	cf := map[string]map[string]int{}
	bf := map[string]map[string]bool{}
	cfKeys := []string{"c1", "c2", "c3"}
	bfKeys := []string{"b1", "b2"}
	item := func() string { return fmt.Sprint("i", rng.IntN(200)) }
	check := func(op int, what, got, want string) {
		t.Helper()
		if got != want {
			t.Fatalf("op %d, %s: %q, want %q", op, what, got, want)
		}
	}
	n := *modelOps
	if testing.Short() {
		n /= 4
	}
	for op := range n {
		k, it := cfKeys[rng.IntN(len(cfKeys))], item()
		b := bfKeys[rng.IntN(len(bfKeys))]
		switch r := rng.IntN(100); {
		case r < 30:
			check(op, "CF.ADD", c.do("CF.ADD", k, it), ":1\r\n")
			if cf[k] == nil {
				cf[k] = map[string]int{}
			}
			cf[k][it]++
		case r < 38:
			got := c.do("CF.ADDNX", k, it)
			if cf[k][it] > 0 {
				check(op, "CF.ADDNX of a present item", got, ":0\r\n")
			} else if got == ":1\r\n" {
				if cf[k] == nil {
					cf[k] = map[string]int{}
				}
				cf[k][it]++
			}
		case r < 50:
			if cf[k][it] > 0 {
				check(op, "CF.DEL of a present item", c.do("CF.DEL", k, it), ":1\r\n")
				cf[k][it]--
			}
		case r < 62:
			if cf[k][it] > 0 {
				check(op, "CF.EXISTS "+k+" "+it, c.do("CF.EXISTS", k, it), ":1\r\n")
			}
			var got int
			fmt.Sscanf(c.do("CF.COUNT", k, it), ":%d", &got)
			if got < cf[k][it] {
				t.Fatalf("op %d: CF.COUNT %s %s = %d, model %d", op, k, it, got, cf[k][it])
			}
		case r < 74:
			got := c.do("BF.ADD", b, it)
			if bf[b][it] {
				check(op, "BF.ADD of a present item", got, ":0\r\n")
			}
			if bf[b] == nil {
				bf[b] = map[string]bool{}
			}
			bf[b][it] = true
		case r < 82:
			if bf[b][it] {
				check(op, "BF.EXISTS", c.do("BF.EXISTS", b, it), ":1\r\n")
			}
		case r < 84:
			want := ":0\r\n"
			if cf[k] != nil {
				want = ":1\r\n"
			}
			check(op, "DEL", c.do("DEL", k), want)
			delete(cf, k)
		case r < 86:
			dst := cfKeys[rng.IntN(len(cfKeys))]
			got := c.do("RENAME", k, dst)
			if cf[k] == nil {
				check(op, "RENAME of a missing key", got, "-ERR no such key\r\n")
				break
			}
			check(op, "RENAME", got, "+OK\r\n")
			m := cf[k]
			delete(cf, k)
			cf[dst] = m
		case r < 87:
			check(op, "FLUSHALL", c.do("FLUSHALL"), "+OK\r\n")
			cf, bf = map[string]map[string]int{}, map[string]map[string]bool{}
		case r < 89:
			c.do("BGSAVE")
		case r < 90:
			if rng.IntN(2) == 0 {
				stopServer(t, s)
			} else {
				s.Close()
			}
			s, addr = startServer(t, cfg)
			c = dial(t, addr)
		default:
			check(op, "DBSIZE", c.do("DBSIZE"), fmt.Sprintf(":%d\r\n", len(cf)+len(bf)))
			for key := range cf {
				check(op, "TYPE", c.do("TYPE", key), "+MBbloomCF\r\n")
			}
		}
	}
	// At the end, every item of the model, after one more restart.
	s.Close()
	_, addr = startServer(t, cfg)
	c = dial(t, addr)
	for k, items := range cf {
		for it, n := range items {
			if n > 0 {
				check(-1, "CF.EXISTS after the last restart", c.do("CF.EXISTS", k, it), ":1\r\n")
			}
		}
	}
	for k, items := range bf {
		for it := range items {
			check(-1, "BF.EXISTS after the last restart", c.do("BF.EXISTS", k, it), ":1\r\n")
		}
	}
}
