package pgtest

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/testlong"
)

func TestStartStop(t *testing.T) {
	testlong.Skip(t)
	start := time.Now()
	s := New(t)
	t.Logf("started in %v", time.Since(start))
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)))
	if err != nil {
		t.Fatalf("the server does not listen on %d: %v", s.Port, err)
	}
	c.Close()
	start = time.Now()
	s.Stop()
	t.Logf("stopped in %v", time.Since(start))
	if _, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))); err == nil {
		t.Fatal("the server still listens after Stop")
	}
}
