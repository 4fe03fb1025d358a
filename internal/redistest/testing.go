package redistest

import (
	"errors"
	"testing"
)

// NewServer starts a server for the test in a temporary directory and
// stops it when the test ends. It skips the test when the binaries are
// missing (saying how to install them) and fails it when the server does
// not start. cfg.Dir may be empty.
func NewServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	skipWithout(t)
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

// NewCluster starts a cluster for the test (see [StartCluster]) in a
// temporary directory and stops it when the test ends, skipping the test
// when the binaries are missing.
func NewCluster(t testing.TB, masters, replicas int, cfg Config) *Cluster {
	t.Helper()
	skipWithout(t)
	c, err := StartCluster(t.TempDir(), masters, replicas, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

func skipWithout(t testing.TB) {
	t.Helper()
	if _, _, err := Binaries(); errors.Is(err, ErrNoServer) {
		t.Skipf("no redis-server: install it with '%s' to run this test", Install)
	}
}
