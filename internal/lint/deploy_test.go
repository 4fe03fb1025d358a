package lint

import (
	"os"
	"strings"
	"testing"
)

// TestSystemdUnitInDocs: the systemd unit docs/server.md shows is
// deploy/cuckoo.service without its comments, so that the two never say
// different things.
func TestSystemdUnitInDocs(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/cuckoo.service")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/server.md")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(unit), "\n") {
		blank := strings.TrimSpace(line) == ""
		if strings.HasPrefix(line, "#") || blank && (len(want) == 0 || want[len(want)-1] == "") {
			continue
		}
		want = append(want, line)
	}
	_, section, ok := strings.Cut(string(doc), "\n### systemd\n")
	if !ok {
		t.Fatal(`docs/server.md has no "### systemd" section`)
	}
	_, block, ok := strings.Cut(section, "```ini\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/server.md's systemd section has no ini block")
	}
	if got, want := strings.TrimSpace(block), strings.TrimSpace(strings.Join(want, "\n")); got != want {
		t.Fatalf("docs/server.md shows the unit\n%s\n\ndeploy/cuckoo.service without its comments is\n%s", got, want)
	}
}
