package server

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dedupkit/cuckoo/internal/datatest"
)

// TestScripts runs the sessions in testdata/script: each file talks to one
// server, over named connections, and compares the replies, rendered with
// their types, with the expected ones. Directives:
//
//	run [client=name]   send each input line as a command, print the replies
//	raw [client=name]   send the input (a Go-quoted string) as bytes, print
//	                    the replies until the server closes the connection
//	restart             stop the server gracefully and start it on its data
//	config key=value    restart with a setting: requirepass, maxmemory,
//	                    maxclients, appendonly, timeout
//	sleep ms=n          wait
//
// Regenerate the expected outputs with -update, and review the diff: the
// error texts must stay Redis's and RedisBloom's.
func TestScripts(t *testing.T) {
	parallel(t)
	files, err := filepath.Glob("testdata/script/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) { runScript(t, path) })
	}
}

func runScript(t *testing.T, path string) {
	cfg := testConfig(t)
	s, addr := startServer(t, cfg)
	conns := map[string]*conn{}
	client := func(c *datatest.Case) *conn {
		name := c.Arg("client", "a")
		if conns[name] == nil {
			conns[name] = dial(t, addr)
		}
		return conns[name]
	}
	restart := func() {
		stopServer(t, s)
		for _, c := range conns {
			c.nc.Close()
		}
		conns = map[string]*conn{}
		s, addr = startServer(t, cfg)
	}
	datatest.RunFile(t, path, func(t *testing.T, c *datatest.Case) string {
		var out strings.Builder
		switch c.Cmd {
		case "run":
			cn := client(c)
			sc := c.Scanner()
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				args, err := splitArgs(sc.Text())
				if err != nil {
					t.Fatalf("%s: %v", c.Pos, err)
				}
				if len(args) == 0 {
					continue
				}
				cn.send(encode(args...))
				raw, err := cn.reply()
				if err != nil {
					out.WriteString("(connection closed)\n")
					delete(conns, c.Arg("client", "a"))
					break
				}
				out.WriteString(render(raw))
			}
		case "raw":
			cn := client(c)
			data, err := strconv.Unquote(strings.TrimSpace(c.Input))
			if err != nil {
				t.Fatalf("%s: input is not a Go string: %v", c.Pos, err)
			}
			cn.send([]byte(data))
			for {
				raw, err := cn.replyWithin(300 * time.Millisecond)
				if isTimeout(err) && raw == "" {
					break
				}
				if err != nil {
					out.WriteString("(connection closed)\n")
					delete(conns, c.Arg("client", "a"))
					break
				}
				out.WriteString(render(raw))
			}
		case "restart":
			restart()
		case "config":
			for k, v := range c.Args {
				switch k {
				case "requirepass":
					cfg.Password = v
				case "maxmemory":
					n, _ := strconv.ParseInt(v, 10, 64)
					cfg.MaxMemory = n
				case "maxclients":
					n, _ := strconv.Atoi(v)
					cfg.MaxClients = n
				case "appendonly":
					cfg.AppendOnly = v == "yes"
				default:
					t.Fatalf("%s: unknown setting %s", c.Pos, k)
				}
			}
			restart()
		case "sleep":
			ms, _ := strconv.Atoi(c.Arg("ms", "0"))
			time.Sleep(time.Duration(ms) * time.Millisecond)
		default:
			t.Fatalf("%s: unknown directive %q", c.Pos, c.Cmd)
		}
		return out.String()
	})
}

func isTimeout(err error) bool {
	type timeout interface{ Timeout() bool }
	te, ok := err.(timeout)
	return ok && te.Timeout()
}
