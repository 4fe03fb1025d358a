package server

import (
	"cmp"
	"fmt"
	"strings"
	"testing"

	"github.com/dedupkit/cuckoo/internal/buildinfo"
)

// TestHelloReply pins HELLO's exact bytes: a map in RESP3, a flat array
// in RESP2, as Redis answers.
func TestHelloReply(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	c := dial(t, addr)
	id := strings.TrimSpace(strings.TrimPrefix(c.do("CLIENT", "ID"), ":"))
	fields := func(proto string) string {
		return "$6\r\nserver\r\n$6\r\ncuckoo\r\n$7\r\nversion\r\n$5\r\n8.0.0\r\n$5\r\nproto\r\n:" + proto +
			"\r\n$2\r\nid\r\n:" + id + "\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"
	}
	if got := c.do("HELLO", "3"); got != "%7\r\n"+fields("3") {
		t.Fatalf("HELLO 3: %q", got)
	}
	if got := c.do("HELLO"); got != "%7\r\n"+fields("3") {
		t.Fatalf("HELLO in RESP3: %q", got)
	}
	if got := c.do("HELLO", "2"); got != "*14\r\n"+fields("2") {
		t.Fatalf("HELLO 2: %q", got)
	}
}

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

// TestClientList shows the connections with their names and libraries.
func TestClientList(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	a, b := dial(t, addr), dial(t, addr)
	a.do("CLIENT", "SETNAME", "alpha")
	a.do("CLIENT", "SETINFO", "LIB-NAME", "go-redis")
	b.do("PING")
	list := render(b.do("CLIENT", "LIST"))
	if !strings.Contains(list, "name=alpha") || !strings.Contains(list, "lib-name=go-redis") || strings.Count(list, "id=") != 2 {
		t.Fatalf("CLIENT LIST: %s", list)
	}
	if info := render(a.do("CLIENT", "INFO")); !strings.Contains(info, "name=alpha") || strings.Count(info, "id=") != 1 {
		t.Fatalf("CLIENT INFO: %s", info)
	}
}
