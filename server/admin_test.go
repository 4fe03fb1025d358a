package server

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/buildinfo"
)

// TestInfo checks that INFO has its sections and the fields tools read,
// as a bulk string in RESP2 and a verbatim string in RESP3.
func TestInfo(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	c.do("CF.ADD", "k", "x")
	info := c.do("INFO")
	for _, want := range []string{"# Server\r\n", "redis_version:8.0.0\r\n", "# Clients\r\n", "connected_clients:1\r\n",
		"# Memory\r\n", "used_memory:", "used_memory_dataset:", "maxmemory:0\r\n", "# Persistence\r\n",
		"aof_enabled:1\r\n", "rdb_bgsave_in_progress:0\r\n", "# Stats\r\n", "total_commands_processed:",
		"# Keyspace\r\n", "db0:keys=1,expires=0,avg_ttl=0\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	// The build, as `cuckoo version` reports it: the module version and
	// revision (zeros, as Redis writes them, when none was recorded).
	build := buildinfo.Read()
	for _, want := range []string{"cuckoo_version:" + build.Version + "\r\n", "cuckoo_git_sha1:" + cmp.Or(build.Revision, "00000000") + "\r\n",
		"go_version:" + build.GoVersion + "\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("INFO lacks %q", want)
		}
	}
	if !strings.HasPrefix(info, "$") {
		t.Errorf("INFO in RESP2 is not a bulk string: %q", info[:10])
	}
	if sec := c.do("INFO", "keyspace"); strings.Contains(sec, "# Server") || !strings.Contains(sec, "db0:") {
		t.Errorf("INFO keyspace: %q", sec)
	}
	c.do("HELLO", "3")
	if v := c.do("INFO", "server"); !strings.HasPrefix(v, "=") || !strings.Contains(v, "txt:# Server") {
		t.Errorf("INFO in RESP3 is not verbatim text: %q", v[:20])
	}
}

// TestCommandTable checks COMMAND against the command table: every
// command listed with its arity and flags, COUNT the table's size, DOCS a
// map of them.
func TestCommandTable(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	if got := c.do("COMMAND", "COUNT"); got != fmt.Sprintf(":%d\r\n", len(commandTable)) {
		t.Fatalf("COMMAND COUNT: %q", got)
	}
	all := c.do("COMMAND")
	if !strings.HasPrefix(all, fmt.Sprintf("*%d\r\n", len(commandTable))) {
		t.Fatalf("COMMAND: %q", all[:20])
	}
	for name := range commandTable {
		if !strings.Contains(all, fmt.Sprintf("$%d\r\n%s\r\n", len(name), name)) {
			t.Errorf("COMMAND lacks %s", name)
		}
	}
	c.do("HELLO", "3")
	docs := c.do("COMMAND", "DOCS", "cf.add")
	if docs != "%1\r\n$6\r\ncf.add\r\n%3\r\n$7\r\nsummary\r\n$31\r\nAdds an item to a cuckoo filter\r\n$5\r\nsince\r\n$5\r\n1.0.0\r\n$5\r\ngroup\r\n$6\r\nmodule\r\n" {
		t.Fatalf("COMMAND DOCS cf.add: %q", docs)
	}
}
