package server

import (
	"strings"
	"testing"
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

// TestClientListWhileOthersSwitchProtocol lists the connections while
// another switches between RESP2 and RESP3: CLIENT LIST reads each
// connection's protocol, which HELLO changes on that connection's own
// event loop or goroutine (run with -race).
func TestClientListWhileOthersSwitchProtocol(t *testing.T) {
	parallel(t)
	_, addr := startServer(t, testConfig(t))
	switcher, lister := dial(t, addr), dial(t, addr)
	// The switcher's HELLOs are sent at once and their replies read at the
	// end, so that the server runs them while the lister lists.
	var hellos []byte
	for range 200 {
		hellos = append(hellos, encode("HELLO", "3")...)
		hellos = append(hellos, encode("HELLO", "2")...)
	}
	switcher.send(hellos)
	for range 20 {
		if list := render(lister.do("CLIENT", "LIST")); strings.Count(list, "id=") != 2 {
			t.Fatalf("CLIENT LIST: %s", list)
		}
	}
	for range 400 {
		if _, err := switcher.reply(); err != nil {
			t.Fatal(err)
		}
	}
	switcher.do("HELLO", "3")
	if list := render(lister.do("CLIENT", "LIST")); strings.Count(list, "resp=3") != 1 || strings.Count(list, "resp=2") != 1 {
		t.Fatalf("CLIENT LIST after one HELLO 3: %s", list)
	}
}
