package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Cluster is a Redis Cluster of servers on loopback ports, created with
// redis-cli --cluster create.
type Cluster struct {
	// Servers are the processes, the first masters (as created) first,
	// then their replicas. Roles change after a failover: ask [Cluster.Nodes].
	Servers []*Server
}

// StartCluster starts masters+masters·replicas servers in subdirectories
// of dir, joins them into a cluster whose masters share the 16384 slots
// evenly, each with the given number of replicas, and waits until every
// node sees the cluster as healthy and every replica is in sync. cfg
// gives the servers' settings (its Dir and Cluster fields are ignored).
func StartCluster(dir string, masters, replicas int, cfg Config) (*Cluster, error) {
	_, cli, err := Binaries()
	if err != nil {
		return nil, err
	}
	if masters < 1 || replicas < 0 {
		return nil, errors.New("redistest: a cluster needs at least one master")
	}
	c := &Cluster{}
	for i := range masters * (1 + replicas) {
		nc := cfg
		nc.Cluster = true
		nc.Dir = filepath.Join(dir, fmt.Sprintf("node%d", i))
		if err := os.MkdirAll(nc.Dir, 0o755); err != nil {
			c.Stop()
			return nil, err
		}
		s, err := Start(nc)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Servers {
		args = append(args, s.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitHealthy(30 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Addrs returns every server's address.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, s := range c.Servers {
		a = append(a, s.Addr)
	}
	return a
}

// Server returns the server at addr, or nil.
func (c *Cluster) Server(addr string) *Server {
	for _, s := range c.Servers {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Stop stops every server.
func (c *Cluster) Stop() {
	for _, s := range c.Servers {
		s.Stop()
	}
}

// WaitHealthy waits until every running node reports cluster_state:ok with
// all slots served, knows every running node, agrees on the masters, and
// every running replica's link to its master is up.
func (c *Cluster) WaitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		if why = c.unhealthy(); why == "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redistest: cluster not healthy after %v: %s", timeout, why)
}

func (c *Cluster) unhealthy() string {
	running := 0
	for _, s := range c.Servers {
		if s.Running() {
			running++
		}
	}
	var view string
	for _, s := range c.Servers {
		if !s.Running() {
			continue
		}
		info, err := s.Do("CLUSTER", "INFO")
		if err != nil {
			return s.Addr + ": " + err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return s.Addr + " reports the cluster not ok"
		}
		nodes, err := s.nodes()
		if err != nil {
			return s.Addr + ": " + err.Error()
		}
		live, masters := 0, []string{}
		for _, n := range nodes {
			if !n.Failed {
				live++
			}
			if n.Master && !n.Failed {
				masters = append(masters, n.ID)
			}
		}
		if live < running {
			return fmt.Sprintf("%s knows %d live nodes of %d", s.Addr, live, running)
		}
		sort.Strings(masters)
		v := strings.Join(masters, ",")
		if view != "" && v != view {
			return "nodes disagree on the masters"
		}
		view = v
		if role, _ := s.Info("role"); role == "slave" {
			if link, _ := s.Info("master_link_status"); link != "up" {
				return s.Addr + ": replica link " + link
			}
		}
	}
	return ""
}

// Node is one line of CLUSTER NODES.
type Node struct {
	ID       string
	Addr     string // 127.0.0.1:port
	Master   bool
	MasterID string // a replica's master
	Failed   bool   // flagged fail or fail?
	Slots    [][2]int
}

// Nodes returns the cluster's nodes as a running server sees them.
func (c *Cluster) Nodes() ([]Node, error) {
	for _, s := range c.Servers {
		if s.Running() {
			return s.nodes()
		}
	}
	return nil, errors.New("redistest: no server running")
}

// MasterOf returns the server that masters slot, as a running server sees
// it.
func (c *Cluster) MasterOf(slot int) (*Server, error) {
	nodes, err := c.Nodes()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		for _, r := range n.Slots {
			if n.Master && slot >= r[0] && slot <= r[1] {
				return c.Server(n.Addr), nil
			}
		}
	}
	return nil, fmt.Errorf("redistest: no master serves slot %d", slot)
}

func (s *Server) nodes() ([]Node, error) {
	text, err := s.Do("CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var nodes []Node
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := Node{ID: f[0], Addr: strings.SplitN(f[1], "@", 2)[0]}
		flags := f[2]
		n.Master = strings.Contains(flags, "master")
		n.Failed = strings.Contains(flags, "fail")
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue // a slot being migrated or imported
			}
			lo, hi, found := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if found {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 == nil && err2 == nil {
				n.Slots = append(n.Slots, [2]int{a, b})
			}
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}
